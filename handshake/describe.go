package handshake

import (
	"encoding/base64"
	"fmt"
	"strings"
)

// EnvDescribe is plugkit's own: a host that only needs a catalog plugin's
// description (a manager's Discover) sets it to "1". A plugkit catalog
// plugin (catalog.Serve, catalog.Main) that finds the right cookie and
// the catalog protocol version among the offered ones then writes one
// describe line (FormatDescribe) on stdout and exits 0, without a key
// pair, a listener or gRPC. Other plugins ignore it and answer with their
// handshake line, and the host carries on with that process as usual.
const EnvDescribe = "PLUGKIT_DESCRIBE"

// DescribePrefix starts a describe line: the format's name and version,
// then the payload.
const DescribePrefix = "plugkit-describe|1|"

// MaxDescribeLine bounds a describe line, newline excluded, and so the
// first line a host reads from a plugin. A description whose line would
// be longer is not written as one: the plugin serves and answers Describe
// over gRPC instead.
const MaxDescribeLine = 16 << 10

// FormatDescribe returns the describe line of payload (the protobuf
// encoding of a catalog.v1 DescribeResponse), without its newline:
// DescribePrefix, then payload in standard base64 with padding. ok is
// false when the line would be longer than MaxDescribeLine.
func FormatDescribe(payload []byte) (line string, ok bool) {
	line = DescribePrefix + base64.StdEncoding.EncodeToString(payload)
	return line, len(line) <= MaxDescribeLine
}

// IsDescribeLine reports whether a plugin's first stdout line claims to
// be a describe line (of any version), as opposed to a handshake line.
func IsDescribeLine(line string) bool {
	return strings.HasPrefix(line, "plugkit-describe|")
}

// ParseDescribe reads a describe line (FormatDescribe's form, a trailing
// "\r" tolerated) and returns its payload. It refuses another version, a
// line longer than MaxDescribeLine, and anything but canonical base64.
func ParseDescribe(line string) ([]byte, error) {
	line = strings.TrimSuffix(line, "\r")
	if len(line) > MaxDescribeLine {
		return nil, fmt.Errorf("describe line of %d bytes, longer than the %d allowed: the plugin is broken; fix it", len(line), MaxDescribeLine)
	}
	rest, ok := strings.CutPrefix(line, DescribePrefix)
	if !ok {
		return nil, fmt.Errorf("describe line %q: want %q then base64 (a newer plugkit plugin? update the host)", clip(line), DescribePrefix)
	}
	payload, err := base64.StdEncoding.Strict().DecodeString(rest)
	if err != nil {
		return nil, fmt.Errorf("describe line: its payload is not standard base64: %w; fix the plugin", err)
	}
	if base64.StdEncoding.EncodeToString(payload) != rest {
		return nil, fmt.Errorf("describe line: its payload is not canonical base64; fix the plugin")
	}
	return payload, nil
}

// clip shortens s for an error message.
func clip(s string) string {
	const n = 64
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
