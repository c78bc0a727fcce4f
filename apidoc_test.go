package plugkit

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// docCheckedPackages are the public packages whose `go doc -all` must name
// no type, function or value of an internal package: a user reading them
// could not build or name what they ask for.
var docCheckedPackages = []string{
	"./automtls",
	"./broker",
	"./catalog",
	"./compat",
	"./conformance",
	"./handshake",
	"./host",
	"./manager",
	"./plugin",
	"./plugintest",
	"./protocheck",
	"./protocheck/bufconfig",
	"./protocheck/load",
	"./protocheck/report",
	"./protocheck/ruleset",
	"./sandbox",
	"./tfserve",
	"./wire",
}

// internalPackageNames lists the package names under internal/ (a
// package is named after its directory here).
func internalPackageNames(t *testing.T) []string {
	t.Helper()
	var names []string
	err := filepath.WalkDir("internal", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if goFiles, _ := filepath.Glob(filepath.Join(path, "*.go")); len(goFiles) > 0 {
				names = append(names, d.Name())
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// TestPublicDocNamesNoInternal runs go doc -all on public packages and
// fails on a declaration (not a comment) that uses an identifier of an
// internal package, such as `Unix listen.UnixConfig` or
// `Send(*pluginpb.ConnInfo) error`.
func TestPublicDocNamesNoInternal(t *testing.T) {
	uses := regexp.MustCompile(`\b(` + strings.Join(internalPackageNames(t), "|") + `)\.[A-Z]`)
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	for _, pkg := range docCheckedPackages {
		out, err := exec.Command(goTool, "doc", "-all", pkg).Output()
		if err != nil {
			t.Fatalf("go doc -all %s: %v", pkg, err)
		}
		for _, line := range strings.Split(string(out), "\n") {
			if strings.HasPrefix(line, "    ") || strings.HasPrefix(strings.TrimSpace(line), "//") {
				continue // documentation, not a declaration
			}
			if uses.MatchString(line) {
				t.Errorf("go doc -all %s declares %q, which names an internal package: move it behind internal/ or give it a public type", pkg, strings.TrimSpace(line))
			}
		}
	}
}
