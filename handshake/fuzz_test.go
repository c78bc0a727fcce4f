package handshake

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// FuzzParse (handshake_test.go) covers the handshake line; its corpus is
// in testdata/fuzz/FuzzParse.

// FuzzParseVersions feeds PLUGIN_PROTOCOL_VERSIONS' parser. Properties:
// an error comes with no versions; versions come sorted, distinct and
// non-negative; written as a host writes them (Env.Environ), they read
// back the same; Negotiate of the list with itself picks its highest.
func FuzzParseVersions(f *testing.F) {
	for _, s := range []string{"5,6", " 6 , 5,5,", "", ",", "-1", "x", "1,,2", "9223372036854775807,0", "+3", "٣"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		vs, err := ParseVersions(s)
		if err != nil {
			if vs != nil {
				t.Fatalf("ParseVersions(%q) = %v with error %v", s, vs, err)
			}
			return
		}
		for i, v := range vs {
			if v < 0 || (i > 0 && vs[i-1] >= v) {
				t.Fatalf("ParseVersions(%q) = %v: not sorted, distinct and non-negative", s, vs)
			}
		}
		again, err := ParseVersions(joinVersions(vs))
		if err != nil || !slices.Equal(again, vs) {
			t.Fatalf("ParseVersions(%q) = %v, written %q, reads back %v, %v", s, vs, joinVersions(vs), again, err)
		}
		if len(vs) > 0 {
			if v, err := Negotiate(vs, vs); err != nil || v != vs[len(vs)-1] {
				t.Fatalf("Negotiate(%v, %v) = %d, %v", vs, vs, v, err)
			}
		}
	})
}

// FuzzReadEnv feeds the plugin side of the contract the environment a
// host sets. Properties: a wrong cookie is a *CookieError and only a wrong
// cookie is; what is read has a valid port range and network; what is
// read, written as a host writes it (Env.Environ), reads back the same
// (ports of 0 aside: Environ writes 0 as go-plugin's default).
func FuzzReadEnv(f *testing.F) {
	f.Add("v", "5,6", "10000", "25000", "-----BEGIN CERTIFICATE-----", "/tmp/s", "wheel", "true", "")
	f.Add("v", "", "", "", "", "", "", "", "tcp")
	f.Add("wrong", "5", "1", "2", "", "", "", "1", "unix")
	f.Add("v", "x", "70000", "-1", "\x00", "a=b", "=", "maybe", "udp")
	f.Add("v", "1", "30000", "20000", "", "", "", "FALSE", "")
	f.Add("v", "1", "0", "65535", "", "", "", "t", "")
	f.Fuzz(func(t *testing.T, cookie, versions, minPort, maxPort, cert, dir, group, mux, network string) {
		want := Cookie{Key: "PLUGKIT_FUZZ_COOKIE", Value: "v"}
		vars := map[string]string{want.Key: cookie}
		for k, v := range map[string]string{EnvProtocolVersions: versions, EnvMinPort: minPort, EnvMaxPort: maxPort,
			EnvClientCert: cert, EnvUnixSocketDir: dir, EnvUnixSocketGroup: group, EnvMultiplexGRPC: mux, EnvNetwork: network} {
			if v != "" {
				vars[k] = v
			}
		}
		lookup := func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
		e, err := ReadEnv(lookup, want)
		var ce *CookieError
		if errors.As(err, &ce) != (cookie != want.Value) {
			t.Fatalf("ReadEnv with cookie %q (want %q): %v", cookie, want.Value, err)
		}
		if err != nil {
			if err.Error() == "" {
				t.Fatalf("ReadEnv(%v): an empty error", vars)
			}
			return
		}
		if e.Cookie != want || e.MinPort < 0 || e.MinPort > e.MaxPort || e.MaxPort > 65535 ||
			(e.Network != "" && e.Network != "unix" && e.Network != "tcp") {
			t.Fatalf("ReadEnv(%v) = %+v", vars, e)
		}
		if e.MinPort == 0 || e.MaxPort == 0 {
			return
		}
		back := map[string]string{}
		for _, kv := range e.Environ() {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				t.Fatalf("Environ() of %+v has %q, not KEY=VALUE", e, kv)
			}
			back[k] = v
		}
		again, err := ReadEnv(func(k string) (string, bool) { v, ok := back[k]; return v, ok }, want)
		if err != nil || !reflect.DeepEqual(again, e) {
			t.Fatalf("ReadEnv(%v) = %+v, written as %v, reads back %+v, %v", vars, e, back, again, err)
		}
	})
}

// FuzzParseDescribe: ParseDescribe never panics, accepts only lines
// within MaxDescribeLine, and what it accepts is exactly what
// FormatDescribe writes for the payload it returns.
func FuzzParseDescribe(f *testing.F) {
	for _, s := range []string{"plugkit-describe|1|", "plugkit-describe|1|CgUxLjAuMA==", "plugkit-describe|1|CgUxLjAuMA==\r",
		"plugkit-describe|2|AA==", "plugkit-describe|1|AB==", "plugkit-describe|1|A\nA==", "plugkit-describe|", "1|5|unix|/p|grpc|"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		payload, err := ParseDescribe(line)
		if err != nil {
			if payload != nil || err.Error() == "" {
				t.Fatalf("ParseDescribe(%q) = %q with error %v", line, payload, err)
			}
			return
		}
		back, ok := FormatDescribe(payload)
		if !ok || back != strings.TrimSuffix(line, "\r") {
			t.Fatalf("ParseDescribe(%q) = %q, written back as %q, %v", line, payload, back, ok)
		}
	})
}
