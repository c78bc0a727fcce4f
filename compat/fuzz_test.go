package compat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/mod/semver"
)

// FuzzParseIndex feeds the release index parser and resolves every
// plugin of what it accepts. Properties: an error comes with no index and
// an index with no error; every version in an accepted index parses; the
// index, written again, reads back the same; Resolve sorts releases
// newest first, and its Latest and Earliest are the first and last
// compatible ones; Message and Advice name the plugin and, when there is
// one, the release to select.
func FuzzParseIndex(f *testing.F) {
	f.Add([]byte(index), uint8(0b110))
	f.Add([]byte(index), uint8(0b10000))
	f.Add([]byte(`{"plugins":{"p":[{"version":"1.0.0-rc.9"},{"version":"1.0.0-rc.10","manifest":{"metadata":{"protocol_versions":["5"]}}},{"version":"v1.0.0+build-7"}]}}`), uint8(0xff))
	f.Add([]byte(`{"plugins":{"p":[{"version":"1.0.0","manifest":{"metadata":{"protocol_versions":[],"kinds":{"k":null,"":["0.0"]}}}}],"q":null,"":[]}}`), uint8(1))
	f.Add([]byte(`{"plugins":{"p":[{"version":"1.2"}]}}`), uint8(1))
	f.Add([]byte(`{"plugins":{"p":[{"version":"1.0.0","manifest":{"metadata":{"protocol_versions":["5.x"]}}}]}}`), uint8(1))
	f.Add([]byte(`{"plugins":{"p":[{"version":"9223372036854775807.0.0","manifest":{"metadata":{"protocol_versions":["9223372036854775807.1"]}}}]}}`), uint8(1))
	f.Add([]byte(`null`), uint8(0))
	f.Add([]byte(`{"plugins":[]}`), uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, mask uint8) {
		ix, err := ParseIndex(data)
		if (ix == nil) == (err == nil) {
			t.Fatalf("ParseIndex(%q) = %v, %v: want an index or an error", data, ix, err)
		}
		if err != nil {
			return
		}
		once, err := json.Marshal(ix)
		if err != nil {
			t.Fatalf("ParseIndex(%q) ok, but the index cannot be written: %v", data, err)
		}
		again, err := ParseIndex(once)
		if err != nil {
			t.Fatalf("ParseIndex(%q) ok, but its rewrite %s does not parse: %v", data, once, err)
		}
		if twice, _ := json.Marshal(again); !bytes.Equal(once, twice) {
			t.Fatalf("ParseIndex(%q): rewritten %s, then %s", data, once, twice)
		}
		var majors []int
		for v := range 8 {
			if mask&(1<<v) != 0 {
				majors = append(majors, v)
			}
		}
		for name, rels := range ix.Plugins {
			kinds := []string{""} // the plugin protocol
			for _, r := range rels {
				if _, err := ParseSemver(r.Version); err != nil {
					t.Fatalf("ParseIndex accepted version %q: %v", r.Version, err)
				}
				for k := range r.Manifest.Metadata.Kinds {
					if k != "" {
						kinds = append(kinds, k)
					}
				}
			}
			for _, kind := range kinds {
				checkResolve(t, ix, name, Requirement{Kind: kind, Majors: majors})
			}
		}
	})
}

func checkResolve(t *testing.T, ix *Index, name string, req Requirement) {
	t.Helper()
	res, err := ix.Resolve(name, req)
	if err != nil {
		t.Fatalf("Resolve(%q, %v) of a plugin in the index: %v", name, req, err)
	}
	if len(res.Releases) != len(ix.Plugins[name]) {
		t.Fatalf("Resolve(%q) has %d releases, the index %d", name, len(res.Releases), len(ix.Plugins[name]))
	}
	latest, earliest := -1, -1
	for i, r := range res.Releases {
		if i > 0 && mustSemver(res.Releases[i-1].Version).Compare(mustSemver(r.Version)) < 0 {
			t.Fatalf("Resolve(%q): v%s before v%s, not newest first", name, res.Releases[i-1].Version, r.Version)
		}
		if req.Compatible(r) {
			if latest < 0 {
				latest = i
			}
			earliest = i
		}
	}
	switch {
	case latest < 0 && (res.Latest != nil || res.Earliest != nil):
		t.Fatalf("Resolve(%q, %v): no compatible release, yet Latest %v Earliest %v", name, req, res.Latest, res.Earliest)
	case latest >= 0 && (res.Latest != &res.Releases[latest] || res.Earliest != &res.Releases[earliest]):
		t.Fatalf("Resolve(%q, %v): Latest %v Earliest %v, want v%s and v%s", name, req, res.Latest, res.Earliest, res.Releases[latest].Version, res.Releases[earliest].Version)
	}
	for _, text := range []string{res.Message(""), res.Message("0.0.1"), res.Message("v99.0.0"), res.Advice()} {
		if !strings.Contains(text, fmt.Sprintf("%q", name)) {
			t.Fatalf("Resolve(%q, %v): the advice does not name the plugin:\n%s", name, req, text)
		}
		if res.Latest != nil && !strings.Contains(text, "v"+res.Earliest.Version) && !strings.Contains(text, "v"+res.Latest.Version) {
			t.Fatalf("Resolve(%q, %v): the advice names no compatible release:\n%s", name, req, text)
		}
	}
}

// FuzzSemver: ParseSemver reads exactly the semantic versions (with or
// without a leading v; MAJOR.MINOR.PATCH in full), its constraint writes
// the same version back, and Compare orders them as semver precedence
// does (golang.org/x/mod/semver is the reference).
func FuzzSemver(f *testing.F) {
	for _, p := range [][2]string{
		{"1.0.0", "v1.0.0"}, {"1.0.0-rc.9", "1.0.0-rc.10"}, {"1.0.0-alpha", "1.0.0-alpha.1"},
		{"1.0.0-alpha.beta", "1.0.0-beta"}, {"1.0.0-beta.11", "1.0.0-beta.2"}, {"1.0.0-rc.1", "1.0.0"},
		{"1.0.0+build-7", "1.0.0"}, {"2.34.1-beta.1+x.y", "2.34.1-beta.1"}, {"01.0.0", "1.0.0-01"},
		{"1.0.0-", "1.0.0-a..b"}, {"1.2", "1"}, {"+1.0.0", "1.0.0-Ω"}, {"1.0.0-x-y", "1.0.0-x"},
	} {
		f.Add(p[0], p[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		va, errA := ParseSemver(a)
		vb, errB := ParseSemver(b)
		for _, c := range []struct {
			s   string
			v   Semver
			err error
		}{{a, va, errA}, {b, vb, errB}} {
			ref := "v" + strings.TrimPrefix(c.s, "v")
			// Full versions only, of numbers that fit an int.
			core := strings.Split(strings.SplitN(strings.SplitN(ref[1:], "+", 2)[0], "-", 2)[0], ".")
			valid := semver.IsValid(ref) && len(core) == 3
			for _, n := range core {
				if _, err := strconv.Atoi(n); err != nil {
					valid = false
				}
			}
			if valid != (c.err == nil) {
				t.Fatalf("ParseSemver(%q) = %+v, %v; semver says valid: %v", c.s, c.v, c.err, valid)
			}
			if c.err != nil {
				continue
			}
			if back, err := ParseSemver(c.v.constraint()); err != nil || back != c.v {
				t.Fatalf("ParseSemver(%q) = %+v, written %q, reads back %+v, %v", c.s, c.v, c.v.constraint(), back, err)
			}
		}
		if errA != nil || errB != nil {
			return
		}
		want := semver.Compare("v"+strings.TrimPrefix(a, "v"), "v"+strings.TrimPrefix(b, "v"))
		if got := va.Compare(vb); got != want || vb.Compare(va) != -want {
			t.Fatalf("Compare(%q, %q) = %d (and %d reversed), want %d", a, b, got, vb.Compare(va), want)
		}
		// Sorting by Compare agrees with sorting by semver.
		vs := []string{a, b, "1.0.0", "1.0.0-rc.1", "0.0.1"}
		byUs := slices.Clone(vs)
		sort.SliceStable(byUs, func(i, j int) bool { return mustSemver(byUs[i]).Compare(mustSemver(byUs[j])) < 0 })
		for i := 1; i < len(byUs); i++ {
			if semver.Compare("v"+strings.TrimPrefix(byUs[i-1], "v"), "v"+strings.TrimPrefix(byUs[i], "v")) > 0 {
				t.Fatalf("sorted by Compare: %q, but semver puts %q after %q", byUs, byUs[i-1], byUs[i])
			}
		}
	})
}

// TestResolvePrereleaseOrder: the latest of rc.9 and rc.10 is rc.10, and
// build metadata does not make a release older or newer.
func TestResolvePrereleaseOrder(t *testing.T) {
	ix, err := ParseIndex([]byte(`{"plugins":{"p":[
		{"version":"1.0.0-rc.10","manifest":{"metadata":{"protocol_versions":["6.0"]}}},
		{"version":"1.0.0-rc.9","manifest":{"metadata":{"protocol_versions":["6.0"]}}},
		{"version":"0.9.0+build-2","manifest":{"metadata":{"protocol_versions":["6.0"]}}},
		{"version":"0.9.0-beta.1","manifest":{"metadata":{"protocol_versions":["6.0"]}}}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	res, err := ix.Resolve("p", Requirement{Majors: []int{6}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Latest.Version != "1.0.0-rc.10" || res.Earliest.Version != "0.9.0-beta.1" {
		t.Fatalf("latest v%s, earliest v%s; want v1.0.0-rc.10 and v0.9.0-beta.1", res.Latest.Version, res.Earliest.Version)
	}
}
