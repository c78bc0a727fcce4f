package plugkit

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plugkit/plugkit/internal/testutil"
)

// hostSidePackages are the packages a host links. They talk to plugins
// but never serve one, so they must not pull in the plugin's server code.
var hostSidePackages = []string{
	"github.com/plugkit/plugkit/manager",
	"github.com/plugkit/plugkit/host",
	"github.com/plugkit/plugkit/compat",
	"github.com/plugkit/plugkit/release",
	"github.com/plugkit/plugkit/describe",
}

// guestFreePackages are host-side packages that run WebAssembly plugins
// only through a guest runner their caller passes (host.GuestRunner), so
// that a program that passes none links no WebAssembly runtime.
var guestFreePackages = []string{
	"github.com/plugkit/plugkit/describe",
	"github.com/plugkit/plugkit/manager",
	"github.com/plugkit/plugkit/release",
}

// pluginServerPackages are packages only a serving plugin needs: the
// plugin side of plugkit and gRPC's reflection server, with their
// subpackages. gRPC's health package is not listed: it holds the
// client-side health checking host.Dial registers as well as the server,
// so a host needs it.
var pluginServerPackages = []string{
	"github.com/plugkit/plugkit/plugin",
	"google.golang.org/grpc/reflection",
}

// pluginSidePackages are what a plugin binary links: the plugin side of
// plugkit, the catalog a plugin serves with, and an example plugin.
var pluginSidePackages = []string{
	"github.com/plugkit/plugkit/plugin",
	"github.com/plugkit/plugkit/catalog",
	"github.com/plugkit/plugkit/examples/objectstore/plugins/memory",
}

// unusedExporterPackages are telemetry packages a plugin cannot use: it
// exports traces only, so no metric or log exporter, no metric or log
// SDK or protocol, nothing of Prometheus, and not autoexport, which
// links all of them. Each costs every plugin binary size and start time.
var unusedExporterPackages = []string{
	"github.com/prometheus",
	"go.opentelemetry.io/contrib/exporters/autoexport",
	"go.opentelemetry.io/contrib/bridges/prometheus",
	"go.opentelemetry.io/otel/exporters/prometheus",
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric",
	"go.opentelemetry.io/otel/exporters/otlp/otlplog",
	"go.opentelemetry.io/otel/exporters/stdout/stdoutmetric",
	"go.opentelemetry.io/otel/exporters/stdout/stdoutlog",
	"go.opentelemetry.io/otel/sdk/metric",
	"go.opentelemetry.io/otel/sdk/log",
	"go.opentelemetry.io/otel/log",
	"go.opentelemetry.io/proto/otlp/metrics",
	"go.opentelemetry.io/proto/otlp/logs",
	"go.opentelemetry.io/proto/otlp/collector/metrics",
	"go.opentelemetry.io/proto/otlp/collector/logs",
}

// hostExporterPackages are exporters a host library must not link: a
// host is given its TracerProvider and MeterProvider, with the exporters
// the program chose (the Prometheus one in the documentation's example).
var hostExporterPackages = []string{
	"github.com/prometheus",
	"go.opentelemetry.io/contrib/exporters/autoexport",
	"go.opentelemetry.io/otel/exporters",
}

// TestHostSideDepsExcludePluginServer fails when a host-side package
// depends on the plugin's server code, so that every host would link it.
// Wire facts both sides share belong in package wire, which imports
// nothing heavy.
func TestHostSideDepsExcludePluginServer(t *testing.T) {
	for _, pkg := range hostSidePackages {
		if bad := depsUnder(t, pkg, pluginServerPackages); len(bad) > 0 {
			t.Errorf("%s depends on %s, plugin-side server code every host would link: find the import that pulls it in (go list -deps -f '{{.ImportPath}}: {{.Imports}}' %s) and take the shared fact from package wire instead", pkg, strings.Join(bad, ", "), pkg)
		}
	}
}

// TestPluginDepsExcludeUnusedExporters fails when a plugin binary links
// a telemetry package it cannot use (see unusedExporterPackages).
func TestPluginDepsExcludeUnusedExporters(t *testing.T) {
	for _, pkg := range pluginSidePackages {
		if bad := depsUnder(t, pkg, unusedExporterPackages); len(bad) > 0 {
			t.Errorf("%s depends on %s, which a plugin cannot use (it exports traces only): find the import that pulls them in (go list -deps -f '{{.ImportPath}}: {{.Imports}}' %s) and build the trace exporter with internal/traceenv instead", pkg, strings.Join(bad, ", "), pkg)
		}
	}
}

// TestHostSideDepsExcludeExporters fails when a host-side package links
// an exporter, which every host program would then carry whatever
// exporter it chose.
func TestHostSideDepsExcludeExporters(t *testing.T) {
	for _, pkg := range hostSidePackages {
		if bad := depsUnder(t, pkg, hostExporterPackages); len(bad) > 0 {
			t.Errorf("%s depends on %s: a host library takes the providers the program made and links no exporter; find the import that pulls them in (go list -deps -f '{{.ImportPath}}: {{.Imports}}' %s) and move it into a test or an example", pkg, strings.Join(bad, ", "), pkg)
		}
	}
}

// TestGuestRunnerIsPassedIn fails when a package of guestFreePackages
// links wazero (or wasmhost): it must take a guest runner from its
// caller instead.
func TestGuestRunnerIsPassedIn(t *testing.T) {
	for _, pkg := range guestFreePackages {
		if bad := depsUnder(t, pkg, []string{"github.com/tetratelabs/wazero", "github.com/plugkit/plugkit/wasmhost"}); len(bad) > 0 {
			t.Errorf("%s depends on %s: take a host.GuestRunner from the caller (cmd/plugkit passes a wasmhost.Runtime) instead of making a runtime; find the import (go list -deps -f '{{.ImportPath}}: {{.Imports}}' %s)", pkg, strings.Join(bad, ", "), pkg)
		}
	}
}

// TestMinimalManagerLinksNoWazero builds the smallest manager program
// (testdata/minimalmanager, which gives its Finder no Guests) and fails
// when its binary holds a symbol of wazero: WebAssembly is an option of
// the host, not a cost of every host. The program is linked through the
// build cache (testutil.BuildBinaryWith: a copy, not a link, run after
// run), with its symbol table (-s=false), which go tool nm reads.
func TestMinimalManagerLinksNoWazero(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bin, err := testutil.BuildBinaryWith(ctx, filepath.Join(t.TempDir(), "minimalmanager"), "./testdata/minimalmanager", "-ldflags=-s=false")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(testutil.GoTool(), "tool", "nm", bin).Output()
	if err != nil {
		t.Fatalf("go tool nm: %v", err)
	}
	const manager = "github.com/plugkit/plugkit/manager.(*Manager).Discover"
	if n := strings.Count(string(out), "github.com/tetratelabs/wazero"); n != 0 || !strings.Contains(string(out), manager) {
		t.Errorf("the minimal manager program has %d wazero symbols (want 0), and %s: %v (want it: the program is a manager)", n, manager, strings.Contains(string(out), manager))
	}
}

// depsUnder returns the dependencies of pkg (go list -deps, tests
// excluded) that are one of prefixes or below one.
func depsUnder(t *testing.T, pkg string, prefixes []string) []string {
	t.Helper()
	all, err := listDeps()
	if err != nil {
		t.Fatal(err)
	}
	deps, ok := all[pkg]
	if !ok {
		t.Fatalf("%s is not among the packages listDeps lists: add its list to listDeps", pkg)
	}
	var found []string
	for _, dep := range deps {
		for _, p := range prefixes {
			if dep == p || strings.HasPrefix(dep, p+"/") {
				found = append(found, dep)
				break
			}
		}
	}
	return found
}

// listDeps lists, once per test binary, the dependencies of each package
// the tests above check (tests excluded; the package itself included, as
// go list -deps gives them): one go list for all of them, rather than one
// per package and test, each of which costs about a second of CPU.
var listDeps = sync.OnceValues(func() (map[string][]string, error) {
	pkgs := slices.Concat(hostSidePackages, guestFreePackages, pluginSidePackages)
	slices.Sort(pkgs)
	pkgs = slices.Compact(pkgs)
	args := append([]string{"list", "-f", "{{.ImportPath}}{{range .Deps}} {{.}}{{end}}"}, pkgs...)
	out, err := exec.Command(testutil.GoTool(), args...).Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		return nil, fmt.Errorf("go list of %s: %v\n%s", strings.Join(pkgs, " "), err, stderr)
	}
	deps := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 {
			return nil, fmt.Errorf("go list printed %q, want a package and its dependencies", line)
		}
		deps[fields[0]] = fields
	}
	if len(deps) != len(pkgs) {
		return nil, fmt.Errorf("go list printed the dependencies of %d packages, want %d (%s)", len(deps), len(pkgs), strings.Join(pkgs, " "))
	}
	return deps, nil
})
