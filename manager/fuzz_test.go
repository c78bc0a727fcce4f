package manager

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	catalogv1 "github.com/plugkit/plugkit/gen/plugkit/catalog/v1"
	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/testpki"
	"github.com/plugkit/plugkit/internal/testutil"
)

// sampleDescribe is an honest answer, as package catalog writes it.
var sampleDescribe = &catalogv1.DescribeResponse{PluginVersion: "1.4.2", SdkVersion: "0.9.0", Kinds: []*catalogv1.Kind{
	{Name: "kv", Majors: []*catalogv1.Major{{Major: 1, Service: "kv.v1.KV", Names: []string{"mem"}}}},
	{Name: "objectstore", Majors: []*catalogv1.Major{
		{Major: 2, Minor: 1, Service: "objectstore.v2.ObjectStore", Capabilities: []string{"presign"}, Names: []string{"example.com/fs", "example.com/s3"}},
		{Major: 1, Service: "objectstore.v1.ObjectStore", Names: []string{"example.com/fs"}},
	}},
}}

// FuzzParseCache feeds the describe cache file's parser. Properties: it
// always returns a map, empty with an error; every entry it accepts has
// an absolute path and a 64-character checksum; what it accepts, written
// again as writeCache writes it, reads back the same; an entry's cached
// Describe answer that protojson reads is written again by saveCache's
// encoding and read back equal.
func FuzzParseCache(f *testing.F) {
	raw, err := protojson.Marshal(sampleDescribe)
	if err != nil {
		f.Fatal(err)
	}
	sum := strings.Repeat("ab", 32)
	good, err := json.MarshalIndent(cacheFile{Version: cacheVersion, Entries: map[string]*cacheEntry{
		"/plugins/a": {Size: 123, ModTime: 1700000000000000000, SHA256: sum, Describe: raw},
		"/plugins/b": {Size: 0, ModTime: -1, SHA256: sum},
	}}, "", "  ")
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{
		string(good),
		`{"version":1,"entries":{}}`,
		`{"version":1}`,
		`{"version":2,"entries":{}}`,
		`{"version":1,"entries":{"/a":null}}`,
		`{"version":1,"entries":{"rel":{"sha256":"` + sum + `"}}}`,
		`{"version":1,"entries":{"/a":{"sha256":"` + sum + `","describe":{"kinds":[{"name":"k","majors":[{"major":4294967295,"names":["n"]}]}],"unknown":1}}}}`,
		`{"version":1,"entries":{"/a":{"sha256":"` + sum + `","describe":"not an object"}}}`,
		`{"version":1,"entries":{"/a":{"sha256":"` + sum + `","describe":{"kinds":[null]}}}}`,
		`{"version":1.5}`,
		`null`,
		`[]`,
		``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		entries, err := parseCache(data)
		if entries == nil {
			t.Fatalf("parseCache(%q) returned a nil map (error %v)", data, err)
		}
		if err != nil {
			if len(entries) != 0 {
				t.Fatalf("parseCache(%q) = %d entries with error %v: want none", data, len(entries), err)
			}
			return
		}
		for p, e := range entries {
			if e == nil || len(e.SHA256) != 64 || !filepath.IsAbs(p) {
				t.Fatalf("parseCache(%q) accepted entry %q: %+v", data, p, e)
			}
		}
		// As writeCache writes it, then read back.
		once, err := json.MarshalIndent(cacheFile{Version: cacheVersion, Entries: entries}, "", "  ")
		if err != nil {
			t.Fatalf("parseCache(%q) ok, but its entries cannot be written: %v", data, err)
		}
		again, err := parseCache(once)
		if err != nil || len(again) != len(entries) {
			t.Fatalf("parseCache(%q) ok, but its rewrite %s reads as %d entries, %v", data, once, len(again), err)
		}
		for p, e := range entries {
			a := again[p]
			if a == nil || a.Size != e.Size || a.ModTime != e.ModTime || a.SHA256 != e.SHA256 {
				t.Fatalf("entry %q: %+v rewritten reads back as %+v", p, e, a)
			}
			var want bytes.Buffer
			if len(e.Describe) > 0 && (json.Compact(&want, e.Describe) != nil || !jsonEqual(want.Bytes(), a.Describe)) {
				t.Fatalf("entry %q: describe %s rewritten reads back as %s", p, e.Describe, a.Describe)
			}
			checkCachedDescribeRoundTrip(t, p, e)
		}
	})
}

// checkCachedDescribeRoundTrip checks that entry p's cached Describe
// answer, when protojson reads it (as describe() does), is written again
// by saveCache's encoding (protojson) and reads back equal.
func checkCachedDescribeRoundTrip(t *testing.T, p string, e *cacheEntry) {
	t.Helper()
	d := &catalogv1.DescribeResponse{}
	if len(e.Describe) == 0 || protojson.Unmarshal(e.Describe, d) != nil {
		return
	}
	out, err := protojson.Marshal(d)
	if err != nil {
		t.Fatalf("entry %q: the cached answer %s read, but does not write back: %v", p, e.Describe, err)
	}
	d2 := &catalogv1.DescribeResponse{}
	if err := protojson.Unmarshal(out, d2); err != nil || !proto.Equal(d, d2) {
		t.Fatalf("entry %q: the cached answer %v, written as %s, reads back as %v, %v", p, d, out, d2, err)
	}
}

// jsonEqual compares two JSON texts as values.
func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	ja, _ := json.Marshal(x)
	jb, _ := json.Marshal(y)
	return bytes.Equal(ja, jb)
}

// FuzzDescribe feeds the manager the Describe answer a plugin sends (its
// protobuf encoding) and checks what the registry and Dispense make of
// it, with two binaries giving the same answer. Properties: every
// (kind, name) the answer claims is found, in the first binary, with
// exactly the majors the answer claims for it; the second binary's names
// are reported as duplicates in one problem, with their count; nothing
// else is found; Dispense
// picks the highest major both sides speak, or says why none is
// (IncompatibleError); a remote entry keeps exactly that (kind, name).
func FuzzDescribe(f *testing.F) {
	honest, err := proto.Marshal(sampleDescribe)
	if err != nil {
		f.Fatal(err)
	}
	split, err := proto.Marshal(&catalogv1.DescribeResponse{Kinds: []*catalogv1.Kind{
		{Name: "kv", Majors: []*catalogv1.Major{{Major: 1, Names: []string{"a"}}}},
		{Name: "kv", Majors: []*catalogv1.Major{{Major: 2, Minor: 3, Names: []string{"a", "a", ""}}, {Major: 2, Minor: 1, Names: []string{"a"}}}},
		{Name: "", Majors: []*catalogv1.Major{{Major: 4294967295, Names: []string{"x"}}}},
		{Name: "empty"},
		nil,
	}})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(honest, uint16(0b110))
	f.Add(honest, uint16(0b1))
	f.Add(honest, uint16(0))
	f.Add(split, uint16(0b100))
	f.Add(split, uint16(0xffff))
	f.Add([]byte{}, uint16(1))
	f.Fuzz(func(t *testing.T, data []byte, hostMask uint16) {
		d := &catalogv1.DescribeResponse{}
		if proto.Unmarshal(data, d) != nil {
			return
		}
		claims := describeClaims(d)
		m := New(Config{Sources: []Source{(&Finder{}).Dirs("/plugins")}})
		defer m.Close()
		first := &found{Entry: Entry{Location: Location{Origin: OriginDir, Path: "/plugins/a"}, Description: d}}
		m.mu.Lock()
		// In precedence order, as a Source lists them.
		m.found = []*found{first, {Entry: Entry{Location: Location{Origin: OriginDir, Path: "/plugins/b"}, Description: proto.Clone(d).(*catalogv1.DescribeResponse)}}}
		m.buildRegistry()
		m.mu.Unlock()
		if len(m.registry) != len(claims) {
			t.Fatalf("the registry has %d entries, the answer claims %d (kind, name): %v", len(m.registry), len(claims), claims)
		}
		problems := m.Problems()
		if want := min(len(claims), 1); len(problems) != want || len(claims) > 1 && !strings.Contains(problems[0], fmt.Sprintf("duplicate: %d (kind, name) pairs", len(claims))) {
			t.Fatalf("%d (kind, name) in two binaries made these problems: %q, want one naming the count", len(claims), problems)
		}
		majors := Majors[Info]{}
		for v := range 16 {
			if hostMask&(1<<v) != 0 {
				majors[v] = func(_ *Conn, info Info) (Info, error) { return info, nil }
			}
		}
		for key, want := range claims {
			im := checkLookup(t, m, d, first.Path, key, want)
			checkDispense(t, m, key, want, majors, len(im.Majors), first.Path)
			checkOnlyImplementation(t, d, key, want)
		}
		// A name the answer does not claim is not found.
		unclaimed := regKey{"kind-not-claimed", "name-not-claimed"}
		if _, ok := claims[unclaimed]; !ok {
			if _, err := m.Lookup(unclaimed.kind, unclaimed.name); err == nil {
				t.Fatalf("Lookup of a (kind, name) the answer does not claim succeeded")
			}
			if n := len(onlyImplementation(d, unclaimed.kind, unclaimed.name).GetKinds()); n != 0 {
				t.Fatalf("onlyImplementation of a (kind, name) the answer does not claim kept %d kinds", n)
			}
		}
		if describeNames(d) == "" {
			t.Fatalf("describeNames is empty")
		}
	})
}

// describeClaims is what a Describe answer claims: the majors of each
// (kind, name), each major once.
func describeClaims(d *catalogv1.DescribeResponse) map[regKey][]int {
	claims := map[regKey][]int{}
	for _, k := range d.GetKinds() {
		for _, maj := range k.GetMajors() {
			for _, n := range maj.GetNames() {
				key := regKey{k.GetName(), n}
				if !slices.Contains(claims[key], int(maj.GetMajor())) {
					claims[key] = append(claims[key], int(maj.GetMajor()))
				}
			}
		}
	}
	return claims
}

// checkLookup checks that m finds key in the binary at path, with d's
// plugin version and exactly the majors want (sorted in place), each of
// that name. It returns what Lookup found.
func checkLookup(t *testing.T, m *Manager, d *catalogv1.DescribeResponse, path string, key regKey, want []int) Implementation {
	t.Helper()
	im, err := m.Lookup(key.kind, key.name)
	if err != nil {
		t.Fatalf("Lookup(%q, %q), which the answer claims: %v", key.kind, key.name, err)
	}
	if im.Path != path || im.PluginVersion != d.GetPluginVersion() {
		t.Fatalf("Lookup(%q, %q) = %s v%s, want %s v%s", key.kind, key.name, im.Path, im.PluginVersion, path, d.GetPluginVersion())
	}
	var got []int
	for _, maj := range im.Majors {
		if !slices.Contains(maj.GetNames(), key.name) {
			t.Fatalf("Lookup(%q, %q) has major %v, which is not of that name", key.kind, key.name, maj)
		}
		if !slices.Contains(got, int(maj.GetMajor())) {
			got = append(got, int(maj.GetMajor()))
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("Lookup(%q, %q) has majors %v; the answer claims %v", key.kind, key.name, got, want)
	}
	return im
}

// checkDispense checks that Dispense of key picks the highest major both
// the host (majors) and the plugin (want) speak, from the binary at path,
// Adapted when it is not the host's highest; or, when they share none,
// fails with an IncompatibleError listing the plugin's pluginMajors.
func checkDispense(t *testing.T, m *Manager, key regKey, want []int, majors Majors[Info], pluginMajors int, path string) {
	t.Helper()
	info, err := Dispense(context.Background(), m, key.kind, key.name, majors)
	best := -1
	for _, v := range want {
		if _, ok := majors[v]; ok && v > best {
			best = v
		}
	}
	if best < 0 {
		var ie *IncompatibleError
		if !errors.As(err, &ie) || ie.Kind != key.kind || ie.Name != key.name || len(ie.PluginMajors) != pluginMajors {
			t.Fatalf("Dispense(%q, %q) with host majors %v and plugin majors %v: %v, want an IncompatibleError", key.kind, key.name, slices.Sorted(maps.Keys(majors)), want, err)
		}
		return
	}
	if err != nil || info.Major != best || info.Kind != key.kind || info.Name != key.name || info.Path != path {
		t.Fatalf("Dispense(%q, %q) with host majors %v and plugin majors %v = %+v, %v; want major %d", key.kind, key.name, slices.Sorted(maps.Keys(majors)), want, info, err, best)
	}
	if info.Adapted != (best != slices.Max(slices.Sorted(maps.Keys(majors)))) {
		t.Fatalf("Dispense(%q, %q) = major %d of host majors %v, Adapted %v", key.kind, key.name, best, slices.Sorted(maps.Keys(majors)), info.Adapted)
	}
}

// checkOnlyImplementation checks that onlyImplementation(d, key) keeps
// exactly key's (kind, name) with the majors want (sorted).
func checkOnlyImplementation(t *testing.T, d *catalogv1.DescribeResponse, key regKey, want []int) {
	t.Helper()
	only := onlyImplementation(d, key.kind, key.name)
	var kept []int
	for _, k := range only.GetKinds() {
		for _, maj := range k.GetMajors() {
			if k.GetName() != key.kind || !slices.Equal(maj.GetNames(), []string{key.name}) {
				t.Fatalf("onlyImplementation(%q, %q) kept %s %v", key.kind, key.name, k.GetName(), maj)
			}
			if !slices.Contains(kept, int(maj.GetMajor())) {
				kept = append(kept, int(maj.GetMajor()))
			}
		}
	}
	slices.Sort(kept)
	if !slices.Equal(kept, want) {
		t.Fatalf("onlyImplementation(%q, %q) kept majors %v; the answer claims %v", key.kind, key.name, kept, want)
	}
}

// FuzzParseRemoteCache feeds the remote cache's parser (CacheFile.remotes).
// Properties: it always returns a map, empty with an error, since
// saveRemoteCache adds to what it returns; what it accepts, written again
// as saveRemoteCache writes it, reads back the same.
func FuzzParseRemoteCache(f *testing.F) {
	raw, err := protojson.Marshal(sampleDescribe)
	if err != nil {
		f.Fatal(err)
	}
	good, err := json.MarshalIndent(map[string]json.RawMessage{
		Remote{Kind: "objectstore", Name: "example.com/fs", Remote: host.Remote{Endpoints: []string{"10.0.0.5:7000"}}}.cacheKey(): raw,
	}, "", "  ")
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{string(good), `{}`, `null`, `[]`, `{"k":null}`, `{"k":1,"k":{}}`, ``, `{"k":` + "\xff}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cache, err := parseRemoteCache(data)
		if cache == nil {
			t.Fatalf("parseRemoteCache(%q) returned a nil map (error %v)", data, err)
		}
		if err != nil {
			if len(cache) != 0 {
				t.Fatalf("parseRemoteCache(%q) = %d entries with error %v", data, len(cache), err)
			}
			return
		}
		once, err := json.MarshalIndent(cache, "", "  ")
		if err != nil {
			t.Fatalf("parseRemoteCache(%q) ok, but its entries cannot be written: %v", data, err)
		}
		again, err := parseRemoteCache(once)
		if err != nil || len(again) != len(cache) {
			t.Fatalf("parseRemoteCache(%q) ok, but its rewrite %s reads as %d entries, %v", data, once, len(again), err)
		}
		for k, v := range cache {
			var want bytes.Buffer
			if json.Compact(&want, v) != nil || !jsonEqual(want.Bytes(), again[k]) {
				t.Fatalf("entry %q: %s rewritten reads back as %s", k, v, again[k])
			}
		}
	})
}

// TestRemoteCacheOfNull: a remote cache file that holds JSON null is
// rebuilt when a remote entry is described, not a nil map written to (a
// panic that took the host down).
func TestRemoteCacheOfNull(t *testing.T) {
	t.Parallel()
	cacheFile := filepath.Join(testutil.TempDir(t), "cache.json")
	m := &Finder{CacheFile: cacheFile}
	if err := os.WriteFile(m.remoteCacheFile(), []byte("null"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := Remote{Kind: "objectstore", Name: "example.com/fs", Remote: host.Remote{Endpoints: []string{"127.0.0.1:1"}}}
	m.saveRemoteCache(context.Background(), []Remote{r}, []*Entry{{Location: Location{Origin: OriginRemote, Endpoints: r.Endpoints}, Description: sampleDescribe}})
	cache := m.loadRemoteCache(context.Background())
	d := &catalogv1.DescribeResponse{}
	if err := protojson.Unmarshal(cache[r.cacheKey()], d); err != nil || !proto.Equal(d, sampleDescribe) {
		t.Fatalf("the rebuilt remote cache has %s for %s (%v); want the description", cache[r.cacheKey()], r.cacheKey(), err)
	}
}

// TestRemoteCacheKeptWhenContextEnds: a Discover whose context has ended
// by the time it saves the remote cache leaves the file as it was, the
// other entries in it, rather than writing its own entries alone.
func TestRemoteCacheKeptWhenContextEnds(t *testing.T) {
	t.Parallel()
	m := &Finder{CacheFile: filepath.Join(testutil.TempDir(t), "cache.json")}
	raw, err := protojson.Marshal(sampleDescribe)
	if err != nil {
		t.Fatal(err)
	}
	other := Remote{Kind: "kv", Name: "mem", Remote: host.Remote{Endpoints: []string{"127.0.0.1:2"}}}
	shared, err := json.Marshal(map[string]json.RawMessage{other.cacheKey(): raw})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(m.remoteCacheFile(), shared, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := Remote{Kind: "objectstore", Name: "example.com/fs", Remote: host.Remote{Endpoints: []string{"127.0.0.1:1"}}}
	m.saveRemoteCache(ctx, []Remote{r}, []*Entry{{Location: Location{Origin: OriginRemote, Endpoints: r.Endpoints}, Description: sampleDescribe}})
	if data, err := os.ReadFile(m.remoteCacheFile()); err != nil || !bytes.Equal(data, shared) {
		t.Errorf("the remote cache after a save with an ended context: %s, %v; want it as it was", data, err)
	}
}

// FuzzLoadRemotes feeds the remotes file (RemotesFile) to
// LoadRemotes, in a directory that holds a CA, a certificate and a key.
// Properties: it accepts one JSON object and nothing after it; what it
// accepts, written again, loads the same entries (TLS or not alike); an
// entry with "tls" gets a configuration with the certificate and the CA.
func FuzzLoadRemotes(f *testing.F) {
	dir := testutil.TempDir(f)
	ca, err := testpki.NewCA("remotes CA")
	if err != nil {
		f.Fatal(err)
	}
	pair, err := ca.Issue("host")
	if err != nil {
		f.Fatal(err)
	}
	if _, err := ca.WriteCA(dir, "ca"); err != nil {
		f.Fatal(err)
	}
	if _, _, err := pair.Write(dir, "host"); err != nil { // host.crt, host.key
		f.Fatal(err)
	}
	for _, s := range []string{
		`{"remotes": [{"kind": "objectstore", "name": "example.com/fs", "endpoints": ["10.0.0.5:7000", "10.0.0.6:7000"], "balancing": "round_robin",
		  "tls": {"ca": "ca.crt", "cert": "host.crt", "key": "host.key", "server_name": "fs.internal"}}]}`,
		`{"remotes": [{"kind": "kv", "name": "mem", "endpoints": ["127.0.0.1:1"]}, {"kind": "kv", "name": "disk", "endpoints": ["[::1]:2"], "balancing": "pick_first"}]}`,
		`{"remotes": [{"kind": "kv", "name": "mem", "endpoints": ["127.0.0.1:1"], "tls": {"ca": "host.key", "cert": "host.crt", "key": "host.key"}}]}`,
		`{"remotes": [{"kind": "kv", "tls": {}}]}`,
		`{"remotes": []}`,
		`{"remotes": null}`,
		`{"remotes": [], "extra": 1}`,
		`{"remotes": []} {"remotes": [{"kind": "ignored"}]}`,
		`{"remotes": []} trailing`,
		`null`,
		``,
	} {
		f.Add([]byte(s))
	}
	path := filepath.Join(dir, "remotes.json")
	load := func(t *testing.T, data []byte) ([]Remote, error) {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return LoadRemotes(path)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		rs, err := load(t, data)
		if err != nil {
			if rs != nil {
				t.Fatalf("LoadRemotes(%q) = %d entries with error %v", data, len(rs), err)
			}
			return
		}
		if !json.Valid(data) {
			t.Fatalf("LoadRemotes(%q) accepted what is not one JSON value", data)
		}
		// Written again: the TLS file names are the directory's (an entry
		// that loaded with TLS loaded these three).
		var out remoteFile
		for _, r := range rs {
			e := remoteEntry{Kind: r.Kind, Name: r.Name, Balancing: r.Balancing, Endpoints: r.Endpoints}
			if r.TLS != nil {
				if len(r.TLS.Certificates) != 1 || r.TLS.RootCAs == nil {
					t.Fatalf("LoadRemotes(%q): entry %q has TLS without its certificate or CA: %+v", data, r.Name, r.TLS)
				}
				e.TLS = &remoteTLS{CA: "ca.crt", Cert: "host.crt", Key: "host.key", ServerName: r.TLS.ServerName}
			}
			out.Remotes = append(out.Remotes, e)
		}
		text, err := json.Marshal(out)
		if err != nil {
			t.Fatal(err)
		}
		again, err := load(t, text)
		if err != nil || len(again) != len(rs) {
			t.Fatalf("LoadRemotes(%q) = %d entries; written as %s, %d entries, %v", data, len(rs), text, len(again), err)
		}
		for i, r := range rs {
			a := again[i]
			if a.Kind != r.Kind || a.Name != r.Name || a.Balancing != r.Balancing || !slices.Equal(a.Endpoints, r.Endpoints) ||
				(a.TLS == nil) != (r.TLS == nil) || (a.TLS != nil && a.TLS.ServerName != r.TLS.ServerName) {
				t.Fatalf("entry %d: %+v written as %s loads as %+v", i, r, text, a)
			}
		}
	})
}
