package main

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/plugkit/plugkit/internal/testutil"
)

// TestLinksNoCgo: plugkit-proto runs once per pair of releases in CI, and
// a package with cgo files (os/user, which archive/tar imports, or net)
// makes the binary dynamically linked: each start then pays the dynamic
// loader and libc's set-up before Go's runtime starts. No package it links
// may have cgo files in a default build.
func TestLinksNoCgo(t *testing.T) {
	if testutil.UnderWine() {
		t.Skip("it runs the Go tool, which does not run under Wine")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", "list", "-deps", "-f", "{{if .CgoFiles}}{{.ImportPath}}{{end}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	if pkgs := strings.Fields(string(out)); len(pkgs) > 0 {
		t.Errorf("plugkit-proto links packages with cgo files %v: it becomes a dynamically linked binary that starts slower; find who imports them with go list -deps -f '{{.ImportPath}}: {{.Imports}}' ./cmd/plugkit-proto", pkgs)
	}
}
