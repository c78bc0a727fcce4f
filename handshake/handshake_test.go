package handshake

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func TestParseAcceptsGoPluginLines(t *testing.T) {
	cert := []byte{0x30, 0x82, 0x01, 0xff, 0x00, 0x10}
	tests := []struct {
		line string
		want Line
	}{
		{"1|1|unix|/tmp/plugin123|grpc|\n", Line{CoreVersion: 1, AppVersion: 1, Network: "unix", Address: "/tmp/plugin123", Protocol: "grpc"}},
		{"1|6|tcp|127.0.0.1:10001|grpc|MIIB/wAQ\r\n", Line{CoreVersion: 1, AppVersion: 6, Network: "tcp", Address: "127.0.0.1:10001", Protocol: "grpc", ServerCert: cert}},
		{"1|5|unix|/s|grpc||true", Line{CoreVersion: 1, AppVersion: 5, Network: "unix", Address: "/s", Protocol: "grpc", Multiplex: true, HasMultiplex: true}},
		{"1|5|unix|/s|grpc", Line{CoreVersion: 1, AppVersion: 5, Network: "unix", Address: "/s", Protocol: "grpc"}},
	}
	for _, tt := range tests {
		got, err := Parse(tt.line)
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.line, err)
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Parse(%q) = %+v, want %+v", tt.line, got, tt.want)
		}
	}
}

func TestStringKeepsTheEmptyCertField(t *testing.T) {
	l := Line{CoreVersion: 1, AppVersion: 1, Network: "unix", Address: "/tmp/x/plugin.sock", Protocol: "grpc"}
	if got, want := l.String(), "1|1|unix|/tmp/x/plugin.sock|grpc|"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	l.HasMultiplex = true
	if got, want := l.String(), "1|1|unix|/tmp/x/plugin.sock|grpc||false"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	l.ServerCert = []byte{1, 2, 3, 4}
	back, err := Parse(l.String())
	if err != nil || !bytes.Equal(back.ServerCert, l.ServerCert) {
		t.Errorf("round trip of the certificate: %v, %x", err, back.ServerCert)
	}
	if strings.HasSuffix(l.String(), "=") || strings.Contains(l.String(), "=|") {
		t.Errorf("certificate must be unpadded base64: %q", l.String())
	}
}

func TestParseRejects(t *testing.T) {
	tests := []struct {
		line, field string
		netrpc      bool
	}{
		{"", "", false},
		{"garbage", "", false},
		{"1|1|unix", "", false},
		{"2|1|unix|/s|grpc|", "core version", false},
		{"x|1|unix|/s|grpc|", "core version", false},
		{"1|v1|unix|/s|grpc|", "app protocol version", false},
		{"1|1|udp|/s|grpc|", "network", false},
		{"1|1|unix||grpc|", "address", false},
		{"1|1|unix|/s|netrpc|", "protocol", true},
		{"1|1|unix|/s", "protocol", true},
		{"1|1|unix|/s|http|", "protocol", false},
		{"1|1|unix|/s|grpc|not base64!", "server certificate", false},
		{"1|1|unix|/s|grpc||maybe", "multiplex", false},
		{"1|1|unix|/s|grpc||true|extra", "", false},
		{"1|1|unix|/s|grpc|" + strings.Repeat("A", 20000), "", false},
	}
	for _, tt := range tests {
		_, err := Parse(tt.line)
		var le *LineError
		if !errors.As(err, &le) {
			t.Errorf("Parse(%.40q) = %v, want a *LineError", tt.line, err)
			continue
		}
		if le.Field != tt.field {
			t.Errorf("Parse(%.40q) blamed field %q, want %q (%v)", tt.line, le.Field, tt.field, err)
		}
		if got := errors.Is(err, ErrNetRPC); got != tt.netrpc {
			t.Errorf("Parse(%.40q): errors.Is(ErrNetRPC) = %v, want %v", tt.line, got, tt.netrpc)
		}
		// The wrapped error's text (what to do about a net/rpc plugin)
		// is part of the message, not only of the chain.
		if le.Err != nil && !strings.Contains(err.Error(), le.Err.Error()) {
			t.Errorf("Parse(%.40q): %q lacks the wrapped error's text %q", tt.line, err, le.Err)
		}
	}
}

func TestNegotiatePicksTheHighestMutualVersion(t *testing.T) {
	tests := []struct {
		plugin, host []int
		want         int
	}{
		{[]int{5, 6}, []int{5, 6}, 6},
		{[]int{5, 6}, []int{5}, 5},
		{[]int{1, 2, 3}, []int{3, 2}, 3},
		{[]int{6, 5}, []int{6, 5, 4}, 6},
	}
	for _, tt := range tests {
		got, err := Negotiate(tt.plugin, tt.host)
		if err != nil || got != tt.want {
			t.Errorf("Negotiate(%v, %v) = %d, %v; want %d", tt.plugin, tt.host, got, err, tt.want)
		}
	}
}

func TestNegotiateErrorNamesBothSides(t *testing.T) {
	_, err := Negotiate([]int{3}, []int{2, 1})
	var ve *VersionError
	if !errors.As(err, &ve) {
		t.Fatalf("err = %v, want *VersionError", err)
	}
	if !reflect.DeepEqual(ve.Plugin, []int{3}) || !reflect.DeepEqual(ve.Host, []int{1, 2}) {
		t.Errorf("VersionError = %+v", ve)
	}
	for _, want := range []string{"plugin supports [3]", "host supports [1 2]"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q lacks %q", err, want)
		}
	}
}

func TestParseVersions(t *testing.T) {
	got, err := ParseVersions(" 6, 5,,5")
	if err != nil || !reflect.DeepEqual(got, []int{5, 6}) {
		t.Errorf("ParseVersions = %v, %v", got, err)
	}
	if _, err := ParseVersions("5,six"); err == nil || !strings.Contains(err.Error(), `"six"`) {
		t.Errorf("ParseVersions(5,six) error = %v", err)
	}
}

func TestEnvRoundTrip(t *testing.T) {
	in := Env{
		Cookie:          Cookie{Key: "MY_COOKIE", Value: "abc"},
		Versions:        []int{5, 6},
		MinPort:         20000,
		MaxPort:         20010,
		ClientCert:      []byte("-----BEGIN CERTIFICATE-----\nAAA\n-----END CERTIFICATE-----\n"),
		UnixSocketDir:   "/run/x",
		UnixSocketGroup: "plugins",
		Multiplex:       true,
		Network:         "tcp",
		Describe:        true,
	}
	vars := map[string]string{}
	for _, kv := range in.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	lookup := func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
	out, err := ReadEnv(lookup, in.Cookie)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Errorf("ReadEnv(Environ()) = %+v, want %+v", out, in)
	}
}

func TestReadEnvRejects(t *testing.T) {
	cookie := Cookie{Key: "K", Value: "v"}
	tests := []struct {
		vars map[string]string
		want string
	}{
		{map[string]string{}, "not meant to be run by hand"},
		{map[string]string{"K": "wrong"}, "not meant to be run by hand"},
		{map[string]string{"K": "v", EnvProtocolVersions: "x"}, EnvProtocolVersions},
		{map[string]string{"K": "v", EnvMinPort: "70000"}, EnvMinPort},
		{map[string]string{"K": "v", EnvMinPort: "30000", EnvMaxPort: "20000"}, "range is empty"},
		{map[string]string{"K": "v", EnvNetwork: "udp"}, EnvNetwork},
	}
	for _, tt := range tests {
		_, err := ReadEnv(func(k string) (string, bool) { v, ok := tt.vars[k]; return v, ok }, cookie)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ReadEnv(%v) = %v, want an error mentioning %q", tt.vars, err, tt.want)
		}
	}
	var ce *CookieError
	_, err := ReadEnv(func(string) (string, bool) { return "", false }, cookie)
	if !errors.As(err, &ce) || ce.Key != "K" {
		t.Errorf("missing cookie: %v", err)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"1|1|unix|/tmp/p|grpc|", "1|6|tcp|127.0.0.1:1|grpc|AAAA|true", "1|1|unix|/s|netrpc", "||||||", "1|1|unix|/s|grpc|=="} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, err := Parse(s)
		if err != nil {
			if _, ok := err.(*LineError); !ok {
				t.Fatalf("Parse(%q) returned %T, want *LineError", s, err)
			}
			return
		}
		if l.CoreVersion != CoreVersion || l.AppVersion < 0 || (l.Network != "unix" && l.Network != "tcp") ||
			l.Address == "" || strings.Contains(l.Address, "|") || l.Protocol != ProtocolGRPC || (l.Multiplex && !l.HasMultiplex) {
			t.Fatalf("Parse(%q) = %+v, a line no plugin can have printed", s, l)
		}
		// Whatever parses must format and parse back to the same line.
		again, err := Parse(l.String())
		if err != nil {
			t.Fatalf("Parse(%q) ok, but its String %q does not parse: %v", s, l.String(), err)
		}
		if fmt.Sprint(again) != fmt.Sprint(l) {
			t.Fatalf("round trip changed %+v into %+v", l, again)
		}
	})
}

func ExampleParse() {
	l, err := Parse("1|6|unix|/tmp/plugkit-1/plugin.sock|grpc|\n")
	if err != nil {
		panic(err)
	}
	fmt.Println(l.AppVersion, l.Network, l.Address, l.ServerCert == nil)
	// Output: 6 unix /tmp/plugkit-1/plugin.sock true
}

func ExampleNegotiate() {
	v, _ := Negotiate([]int{5, 6}, []int{5})
	fmt.Println(v)
	_, err := Negotiate([]int{3}, []int{1, 2})
	fmt.Println(err)
	// Output:
	// 5
	// incompatible app protocol version: plugin supports [3], host supports [1 2]; upgrade whichever side is older (or pick a plugin release that speaks one of [1 2])
}
