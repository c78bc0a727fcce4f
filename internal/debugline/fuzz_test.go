package debugline_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/plugkit/plugkit/handshake"
	"github.com/plugkit/plugkit/internal/debugline"
	"github.com/plugkit/plugkit/plugin"
	"github.com/plugkit/plugkit/tfserve"
)

// FuzzParse feeds Parse what a person pastes
// after --reattach or puts in PLUGKIT_REATTACH / TF_REATTACH_PROVIDERS.
// Properties: an error comes with a nil map and a map with a nil error
// (never nil and nil); whatever parses encodes back, as JSON and as each
// plugin's debug line, to the same configurations; Only answers
// a name exactly when there is one entry.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"p":{"Protocol":"grpc","ProtocolVersion":6,"Pid":7,"Test":true,"Addr":{"Network":"unix","String":"/tmp/p.sock"}}}`,
		`PLUGKIT_REATTACH='{"p":{"Protocol":"grpc","ProtocolVersion":1,"Pid":1,"Test":true,"Addr":{"Network":"tcp","String":"127.0.0.1:1234"}}}'`,
		"\tTF_REATTACH_PROVIDERS='{\"registry.terraform.io/x/y\":{\"Protocol\":\"grpc\",\"ProtocolVersion\":6,\"Pid\":2,\"Test\":true,\"Addr\":{\"Network\":\"unix\",\"String\":\"/tmp/it'\"'\"'s\"}}}'\n",
		`X="{}"`,
		`{"a":{},"b":{"Addr":{}}}`,
		`{}`,
		`null`,
		`X=null`,
		`PLUGKIT_REATTACH='{`,
		`PLUGKIT_REATTACH="$(id)"`,
		`{"p":{"protocol":"GRPC","pid":-1,"addr":{"network":"udp"}}}`,
		`{"p":{"Pid":1e400}}`,
		`{"\xff":{"Addr":{"String":"\xfe"}}}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		rcs, err := debugline.Parse(line)
		if err != nil {
			if rcs != nil {
				t.Fatalf("Parse(%q) = %v with error %v: want no configurations with an error", line, rcs, err)
			}
			if err.Error() == "" {
				t.Fatalf("Parse(%q): an empty error", line)
			}
			return
		}
		if rcs == nil {
			t.Fatalf("Parse(%q) = nil, nil: want configurations or an error", line)
		}
		// The whole object, encoded again, reads back the same.
		data, err := json.Marshal(rcs)
		if err != nil {
			t.Fatalf("encoding %v: %v", rcs, err)
		}
		again, err := handshake.ParseReattach(data)
		if err != nil || !reflect.DeepEqual(again, rcs) {
			t.Fatalf("Parse(%q) = %+v, whose JSON %s reads back as %+v, %v", line, rcs, data, again, err)
		}
		// Each entry, announced as a plugin in debug mode announces it,
		// reads back the same.
		for name, rc := range rcs {
			checkAnnouncements(t, name, rc)
		}
		name, rc, err := debugline.Only(rcs)
		if (err == nil) != (len(rcs) == 1) {
			t.Fatalf("Only of %d configurations: %v", len(rcs), err)
		}
		if err == nil && rcs[name] != rc {
			t.Fatalf("Only = %q %+v, not an entry of %+v", name, rc, rcs)
		}
	})
}

// FuzzReattachRoundTrip: what a plugin in debug mode prints (plugin's
// DebugLine, tfserve's DebugAnnounce, the bare ReattachJSON) is read back
// by the host as the configuration the plugin meant, whatever its name,
// address and numbers.
func FuzzReattachRoundTrip(f *testing.F) {
	f.Add("p", "grpc", 6, 1234, true, "unix", "/tmp/plugkit-1/plugin.sock")
	f.Add("registry.terraform.io/hashicorp/null", "grpc", 5, 1, false, "tcp", "127.0.0.1:10000")
	f.Add("it's", "netrpc", -1, -7, true, "", "")
	f.Add(`a'"'"'b`, `'`, 0, 0, false, `"`, `$(id) ; \ `)
	f.Add("<&>\u2028", "\x00", 1<<40, -1<<40, true, "\t\n", "{}")
	f.Fuzz(func(t *testing.T, name, protocol string, version, pid int, test bool, network, addr string) {
		for _, s := range []string{name, protocol, network, addr} {
			if !utf8.ValidString(s) {
				return // JSON carries text; a plugin's names and paths are text
			}
		}
		r := handshake.Reattach{Protocol: protocol, ProtocolVersion: version, Pid: pid, Test: test,
			Addr: handshake.ReattachAddr{Network: network, String: addr}}
		checkAnnouncements(t, name, r)
	})
}

// checkAnnouncements reads back each form in which a plugin announces r
// under name, and wants {name: r} from each.
func checkAnnouncements(t *testing.T, name string, r handshake.Reattach) {
	t.Helper()
	text, err := handshake.ReattachJSON(name, r)
	if err != nil {
		t.Fatalf("ReattachJSON(%q, %+v): %v", name, r, err)
	}
	var line bytes.Buffer
	if err := plugin.DebugLine(&line, name, r); err != nil {
		t.Fatalf("DebugLine(%q, %+v): %v", name, r, err)
	}
	var announce bytes.Buffer
	if err := tfserve.DebugAnnounce(&announce, name, r); err != nil {
		t.Fatalf("DebugAnnounce(%q, %+v): %v", name, r, err)
	}
	// The one line of the announcement a person copies: the indented one.
	var tfLine string
	for _, l := range strings.Split(announce.String(), "\n") {
		if strings.HasPrefix(l, "\t"+tfserve.EnvReattachProviders+"=") {
			tfLine = l
		}
	}
	if tfLine == "" {
		t.Fatalf("DebugAnnounce(%q, %+v) has no %s line:\n%s", name, r, tfserve.EnvReattachProviders, announce.String())
	}
	for _, form := range []string{text, line.String(), tfLine} {
		got, err := debugline.Parse(form)
		if err != nil {
			t.Fatalf("Parse(%q), what the plugin printed for %q %+v: %v", form, name, r, err)
		}
		if len(got) != 1 || got[name] != r {
			t.Fatalf("Parse(%q) = %+v, want {%q: %+v}", form, got, name, r)
		}
	}
}
