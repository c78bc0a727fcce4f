package compat

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/mod/semver"
)

// Manifest is one release's manifest.
type Manifest struct {
	Version  int      `json:"version"`
	Metadata Metadata `json:"metadata"`
}

// Metadata says which protocol versions and kind versions a release
// speaks, each as "MAJOR.MINOR".
type Metadata struct {
	ProtocolVersions []string            `json:"protocol_versions,omitempty"`
	Kinds            map[string][]string `json:"kinds,omitempty"`
}

// Release is one release of a plugin.
type Release struct {
	Version  string   `json:"version"`
	Manifest Manifest `json:"manifest"`
}

// Index lists releases by plugin name.
type Index struct {
	Plugins map[string][]Release `json:"plugins"`
}

// ParseIndex reads an index and checks every version in it.
func ParseIndex(data []byte) (*Index, error) {
	var ix Index
	if err := json.Unmarshal(data, &ix); err != nil {
		return nil, fmt.Errorf("release index: %w (want {\"plugins\":{\"NAME\":[{\"version\":\"1.0.0\",\"manifest\":{...}}]}})", err)
	}
	for name, rels := range ix.Plugins {
		for _, r := range rels {
			if _, err := ParseSemver(r.Version); err != nil {
				return nil, fmt.Errorf("release index: plugin %q: %w", name, err)
			}
			for _, pv := range r.Manifest.Metadata.ProtocolVersions {
				if _, _, err := parseMajorMinor(pv); err != nil {
					return nil, fmt.Errorf("release index: plugin %q v%s: protocol version: %w", name, r.Version, err)
				}
			}
			for kind, vs := range r.Manifest.Metadata.Kinds {
				for _, v := range vs {
					if _, _, err := parseMajorMinor(v); err != nil {
						return nil, fmt.Errorf("release index: plugin %q v%s: kind %s: %w", name, r.Version, kind, err)
					}
				}
			}
		}
	}
	return &ix, nil
}

// LoadIndex reads an index file.
func LoadIndex(path string) (*Index, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("release index: %w", err)
	}
	return ParseIndex(data)
}

// Requirement is what a host can use: the majors it speaks of a kind, or,
// with Kind empty, of the plugin protocol (protocol_versions).
type Requirement struct {
	Kind   string
	Majors []int
}

// String says what the requirement asks for, "objectstore major 1 or 2".
func (r Requirement) String() string {
	what := "protocol"
	if r.Kind != "" {
		what = r.Kind
	}
	ms := slices.Clone(r.Majors)
	sort.Ints(ms)
	parts := make([]string, len(ms))
	for i, m := range ms {
		parts[i] = strconv.Itoa(m)
	}
	return fmt.Sprintf("%s major %s", what, strings.Join(parts, " or "))
}

// Compatible reports whether a release speaks a major the host does.
func (r Requirement) Compatible(rel Release) bool {
	versions := rel.Manifest.Metadata.ProtocolVersions
	if r.Kind != "" {
		versions = rel.Manifest.Metadata.Kinds[r.Kind]
	}
	for _, v := range versions {
		if major, _, err := parseMajorMinor(v); err == nil && slices.Contains(r.Majors, major) {
			return true
		}
	}
	return false
}

// Result is what Resolve found.
type Result struct {
	Plugin      string
	Requirement Requirement
	// Latest and Earliest are the newest and oldest compatible releases;
	// nil when there is none.
	Latest, Earliest *Release
	// Releases are all releases, newest first.
	Releases []Release
}

// Resolve finds the compatible releases of plugin.
func (ix *Index) Resolve(plugin string, req Requirement) (Result, error) {
	rels, ok := ix.Plugins[plugin]
	if !ok {
		names := make([]string, 0, len(ix.Plugins))
		for n := range ix.Plugins {
			names = append(names, n)
		}
		sort.Strings(names)
		return Result{}, fmt.Errorf("plugin %q is not in the release index (it has %s)", plugin, strings.Join(names, ", "))
	}
	res := Result{Plugin: plugin, Requirement: req, Releases: slices.Clone(rels)}
	sort.Slice(res.Releases, func(i, j int) bool {
		a, _ := ParseSemver(res.Releases[i].Version)
		b, _ := ParseSemver(res.Releases[j].Version)
		return a.Compare(b) > 0
	})
	for i := range res.Releases {
		if req.Compatible(res.Releases[i]) {
			if res.Latest == nil {
				res.Latest = &res.Releases[i]
			}
			res.Earliest = &res.Releases[i]
		}
	}
	return res, nil
}

// Message explains, in Terraform's words, why release current (may be
// empty when unknown) cannot be used and which release to select.
func (r Result) Message(current string) string {
	var b strings.Builder
	if current != "" {
		fmt.Fprintf(&b, "Plugin %q v%s is not compatible with this host (it needs %s).\n", r.Plugin, strings.TrimPrefix(current, "v"), r.Requirement)
	} else {
		fmt.Fprintf(&b, "Plugin %q is not compatible with this host (it needs %s).\n", r.Plugin, r.Requirement)
	}
	if r.Latest == nil {
		fmt.Fprintf(&b, "No release of %q is compatible: ", r.Plugin)
		var parts []string
		for _, rel := range r.Releases {
			parts = append(parts, fmt.Sprintf("v%s speaks %s", rel.Version, r.speaks(rel)))
		}
		b.WriteString(strings.Join(parts, "; "))
		b.WriteString(".\nUpgrade or downgrade the host to one that speaks one of those versions.\n")
		return b.String()
	}
	cur, err := ParseSemver(current)
	tooOld := err == nil && cur.Compare(mustSemver(r.Earliest.Version)) < 0
	if tooOld {
		fmt.Fprintf(&b, "Plugin version v%s is the earliest compatible version. Select it with the following version constraint:\n\n    version = %q\n",
			r.Earliest.Version, "~> "+mustSemver(r.Earliest.Version).constraint())
		return b.String()
	}
	fmt.Fprintf(&b, "Plugin version v%s is the latest compatible version. Select it with the following constraint:\n\n    version = %q\n",
		r.Latest.Version, "~> "+mustSemver(r.Latest.Version).constraint())
	b.WriteString("\nAlternatively, upgrade the host for compatibility with newer plugin releases.\n")
	return b.String()
}

// Advice says which release to select when the installed one is unknown:
// the latest compatible release when there is one (never "not
// compatible" then), else Message's explanation of why none is.
func (r Result) Advice() string {
	if r.Latest == nil {
		return r.Message("")
	}
	return fmt.Sprintf("Plugin version v%s of %q is the latest release compatible with this host (it needs %s). Select it with the following constraint:\n\n    version = %q\n",
		r.Latest.Version, r.Plugin, r.Requirement, "~> "+mustSemver(r.Latest.Version).constraint())
}

func (r Result) speaks(rel Release) string {
	versions := rel.Manifest.Metadata.ProtocolVersions
	what := "protocol"
	if r.Requirement.Kind != "" {
		versions = rel.Manifest.Metadata.Kinds[r.Requirement.Kind]
		what = r.Requirement.Kind
	}
	if len(versions) == 0 {
		return "no " + what + " version"
	}
	return what + " " + strings.Join(versions, ", ")
}

func parseMajorMinor(s string) (int, int, error) {
	maj, min, ok := strings.Cut(s, ".")
	if !ok {
		min = "0"
	}
	a, err1 := strconv.Atoi(maj)
	b, err2 := strconv.Atoi(min)
	if err1 != nil || err2 != nil || a < 0 || b < 0 {
		return 0, 0, fmt.Errorf("%q is not MAJOR.MINOR", s)
	}
	return a, b, nil
}

// Semver is a parsed semantic version.
type Semver struct {
	Major, Minor, Patch int
	Pre                 string
}

// ParseSemver reads a semantic version in full (semver.org), with or
// without a leading v: "1.2.3", "v1.2.3", "1.2.3-beta.1", "1.2.3+build.5".
// Build metadata is dropped: it has no part in precedence.
func ParseSemver(s string) (Semver, error) {
	var v Semver
	s = strings.TrimPrefix(s, "v")
	bad := fmt.Errorf("version %q is not semantic (MAJOR.MINOR.PATCH, then -PRERELEASE and +BUILD if any)", s)
	core, _, _ := strings.Cut(s, "+")
	core, pre, _ := strings.Cut(core, "-")
	parts := strings.Split(core, ".")
	// semver.IsValid also takes the shorthands v1 and v1.2; a release
	// names all three numbers.
	if !semver.IsValid("v"+s) || len(parts) != 3 {
		return v, bad
	}
	nums := []*int{&v.Major, &v.Minor, &v.Patch}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil {
			return v, bad
		}
		*nums[i] = n
	}
	v.Pre = pre
	return v, nil
}

func mustSemver(s string) Semver {
	v, _ := ParseSemver(s)
	return v
}

// Compare returns -1, 0 or 1. A pre-release sorts before its release.
func (v Semver) Compare(o Semver) int {
	for _, d := range []int{v.Major - o.Major, v.Minor - o.Minor, v.Patch - o.Patch} {
		if d != 0 {
			if d < 0 {
				return -1
			}
			return 1
		}
	}
	switch {
	case v.Pre == o.Pre:
		return 0
	case v.Pre == "":
		return 1
	case o.Pre == "":
		return -1
	}
	// Pre-releases compare identifier by identifier, numbers as numbers:
	// rc.9 before rc.10.
	a, b := "v0.0.0-"+v.Pre, "v0.0.0-"+o.Pre
	if !semver.IsValid(a) || !semver.IsValid(b) {
		return strings.Compare(v.Pre, o.Pre) // a Semver not made by ParseSemver
	}
	return semver.Compare(a, b)
}

// constraint is the "~>" operand that selects this release's patch line.
func (v Semver) constraint() string {
	s := fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch)
	if v.Pre != "" {
		s += "-" + v.Pre
	}
	return s
}
