package handshake

import (
	"bytes"
	"strings"
	"testing"
)

// TestDescribeLineRoundTrip: a payload written by FormatDescribe reads
// back the same, and one too big for MaxDescribeLine is not written.
func TestDescribeLineRoundTrip(t *testing.T) {
	for _, payload := range [][]byte{nil, {0}, []byte("\x0a\x051.0.0"), bytes.Repeat([]byte{0xfe}, 12000)} {
		line, ok := FormatDescribe(payload)
		if !ok || !IsDescribeLine(line) || strings.ContainsAny(line, "\r\n") {
			t.Fatalf("FormatDescribe(%d bytes) = %.40q, %v", len(payload), line, ok)
		}
		got, err := ParseDescribe(line)
		if err != nil || !bytes.Equal(got, payload) {
			t.Fatalf("ParseDescribe(FormatDescribe(%d bytes)) = %d bytes, %v", len(payload), len(got), err)
		}
	}
	if line, ok := FormatDescribe(make([]byte, MaxDescribeLine)); ok {
		t.Errorf("FormatDescribe of %d bytes gave a %d-byte line, beyond MaxDescribeLine", MaxDescribeLine, len(line))
	}
}

// TestParseDescribeRejects: another version, non-canonical or broken
// base64, a line too long, and handshake lines are refused with a reason.
func TestParseDescribeRejects(t *testing.T) {
	for line, want := range map[string]string{
		"plugkit-describe|2|AAAA":                                    "want \"plugkit-describe|1|\"",
		"plugkit-describe|1|AA*A":                                    "not standard base64",
		"plugkit-describe|1|AAA":                                     "not standard base64",
		"plugkit-describe|1|AB==":                                    "not standard base64", // non-zero padding bits
		"plugkit-describe|1|AA\nAA":                                  "not canonical base64",
		"plugkit-describe|1|" + strings.Repeat("A", MaxDescribeLine): "longer than",
		"1|5|unix|/tmp/p.sock|grpc|":                                 "want \"plugkit-describe|1|\"",
	} {
		_, err := ParseDescribe(line)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseDescribe(%.40q) = %v, want an error with %q", line, err, want)
		}
	}
}
