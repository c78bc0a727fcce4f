package compat

import (
	"strings"
	"testing"
)

const index = `{"plugins": {"aws": [
  {"version": "1.0.0",  "manifest": {"version": 1, "metadata": {"protocol_versions": ["4.0"]}}},
  {"version": "2.0.0",  "manifest": {"version": 1, "metadata": {"protocol_versions": ["4.0", "5.0"]}}},
  {"version": "2.34.0", "manifest": {"version": 1, "metadata": {"protocol_versions": ["5.2"]}}},
  {"version": "2.34.1-beta.1", "manifest": {"version": 1, "metadata": {"protocol_versions": ["5.2"]}}},
  {"version": "3.0.0",  "manifest": {"version": 1, "metadata": {"protocol_versions": ["6.0"]}}}
], "fs": [
  {"version": "1.0.0", "manifest": {"version": 1, "metadata": {"kinds": {"objectstore": ["1.0"]}}}},
  {"version": "2.1.0", "manifest": {"version": 1, "metadata": {"kinds": {"objectstore": ["2.1", "1.0"]}}}},
  {"version": "3.0.0", "manifest": {"version": 1, "metadata": {"kinds": {"objectstore": ["3.0"]}}}}
]}}`

func TestResolve(t *testing.T) {
	ix, err := ParseIndex([]byte(index))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		plugin           string
		req              Requirement
		latest, earliest string
	}{
		{"aws", Requirement{Majors: []int{5}}, "2.34.1-beta.1", "2.0.0"},
		{"aws", Requirement{Majors: []int{4}}, "2.0.0", "1.0.0"},
		{"aws", Requirement{Majors: []int{5, 6}}, "3.0.0", "2.0.0"},
		{"fs", Requirement{Kind: "objectstore", Majors: []int{1}}, "2.1.0", "1.0.0"},
		{"fs", Requirement{Kind: "objectstore", Majors: []int{2}}, "2.1.0", "2.1.0"},
		{"fs", Requirement{Kind: "objectstore", Majors: []int{3}}, "3.0.0", "3.0.0"},
		{"fs", Requirement{Kind: "blobstore", Majors: []int{1}}, "", ""},
	}
	for _, tt := range tests {
		res, err := ix.Resolve(tt.plugin, tt.req)
		if err != nil {
			t.Fatal(err)
		}
		var latest, earliest string
		if res.Latest != nil {
			latest, earliest = res.Latest.Version, res.Earliest.Version
		}
		if latest != tt.latest || earliest != tt.earliest {
			t.Errorf("%s %v: latest %q earliest %q, want %q %q", tt.plugin, tt.req, latest, earliest, tt.latest, tt.earliest)
		}
	}
}

func TestMessagesInTerraformsWords(t *testing.T) {
	ix, _ := ParseIndex([]byte(index))
	res, _ := ix.Resolve("fs", Requirement{Kind: "objectstore", Majors: []int{1, 2}})
	newer := res.Message("3.0.0")
	for _, want := range []string{`Plugin "fs" v3.0.0 is not compatible with this host (it needs objectstore major 1 or 2).`,
		"Plugin version v2.1.0 is the latest compatible version. Select it with the following constraint:",
		`    version = "~> 2.1.0"`, "Alternatively, upgrade the host"} {
		if !strings.Contains(newer, want) {
			t.Errorf("message for a too-new release lacks %q:\n%s", want, newer)
		}
	}
	res, _ = ix.Resolve("aws", Requirement{Majors: []int{5}})
	older := res.Message("1.0.0")
	for _, want := range []string{"Plugin version v2.0.0 is the earliest compatible version. Select it with the following version constraint:", `version = "~> 2.0.0"`} {
		if !strings.Contains(older, want) {
			t.Errorf("message for a too-old release lacks %q:\n%s", want, older)
		}
	}
	res, _ = ix.Resolve("fs", Requirement{Kind: "objectstore", Majors: []int{9}})
	none := res.Message("")
	if !strings.Contains(none, "No release of \"fs\" is compatible") || !strings.Contains(none, "v3.0.0 speaks objectstore 3.0") {
		t.Errorf("message with no compatible release:\n%s", none)
	}
}

func TestParseIndexRejects(t *testing.T) {
	for _, bad := range []string{
		`{"plugins": {"x": [{"version": "one", "manifest": {}}]}}`,
		`{"plugins": {"x": [{"version": "1.0.0", "manifest": {"metadata": {"protocol_versions": ["five"]}}}]}}`,
		`{"plugins": {"x": [{"version": "1.0.0", "manifest": {"metadata": {"kinds": {"k": ["1.x"]}}}}]}}`,
		`not json`,
	} {
		if _, err := ParseIndex([]byte(bad)); err == nil || !strings.Contains(err.Error(), "release index") {
			t.Errorf("ParseIndex(%s) = %v", bad, err)
		}
	}
	ix, _ := ParseIndex([]byte(index))
	if _, err := ix.Resolve("gcp", Requirement{Majors: []int{5}}); err == nil || !strings.Contains(err.Error(), "aws, fs") {
		t.Errorf("Resolve of an unknown plugin: %v", err)
	}
}

func TestSemverOrder(t *testing.T) {
	order := []string{"0.9.9", "1.0.0-alpha", "1.0.0-beta", "1.0.0", "1.2.0", "1.10.0", "2.0.0"}
	for i := 1; i < len(order); i++ {
		a, _ := ParseSemver(order[i-1])
		b, _ := ParseSemver(order[i])
		if a.Compare(b) >= 0 || b.Compare(a) <= 0 {
			t.Errorf("%s should sort before %s", order[i-1], order[i])
		}
	}
}
