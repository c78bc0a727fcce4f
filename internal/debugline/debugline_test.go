package debugline_test

import (
	"strings"
	"testing"

	"github.com/plugkit/plugkit/handshake"
	"github.com/plugkit/plugkit/internal/debugline"
)

func TestParse(t *testing.T) {
	want := handshake.Reattach{Protocol: "grpc", ProtocolVersion: 6, Pid: 7, Test: true, Addr: handshake.ReattachAddr{Network: "unix", String: "/tmp/it's here"}}
	const obj = `{"registry.terraform.io/x/y":{"Protocol":"grpc","ProtocolVersion":6,"Pid":7,"Test":true,"Addr":{"Network":"unix","String":"/tmp/it'"'"'s here"}}}`
	for _, line := range []string{
		"PLUGKIT_REATTACH='" + obj + "'\n",
		"\tTF_REATTACH_PROVIDERS='" + obj + "'",
		strings.ReplaceAll(obj, `'"'"'`, "'"),
	} {
		rcs, err := debugline.Parse(line)
		if err != nil {
			t.Errorf("Parse(%q): %v", line, err)
			continue
		}
		name, rc, err := debugline.Only(rcs)
		if err != nil || name != "registry.terraform.io/x/y" || rc != want {
			t.Errorf("Parse(%q) = %q %+v %v: want %+v", line, name, rc, err, want)
		}
	}
	for line, wantErr := range map[string]string{
		"PLUGKIT_REATTACH='{":              "unterminated single quote",
		"PLUGKIT_REATTACH=\"$(rm -rf /)\"": "is not supported",
		"PLUGKIT_REATTACH={\"a\": 1}":      "unquoted",
		"nonsense":                         "want the JSON object, or the line",
		"PLUGKIT_REATTACH='{not json}'":    "want {\"NAME\"",
		`{"a":{"Protocol":"grpc"},"b":{}}`: "names 2 plugins (a, b)",
		`{}`:                               "names no plugin",
	} {
		rcs, err := debugline.Parse(line)
		if err == nil {
			_, _, err = debugline.Only(rcs)
		}
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("Parse(%q): %v: want an error saying %q", line, err, wantErr)
		}
	}
}
