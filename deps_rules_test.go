package plugkit

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// depsRules are the layers of the module's packages, as data, in the
// form Go's own go/build/deps_test.go keeps the standard library's:
//
//	a, b < c, d;
//
// says that c and d may import a and b, and whatever a and b may import.
// NONE is the empty list, # starts a comment, and a rule may chain
// (a < b < c). Every package of the module is on the right of exactly one
// rule, after the rules of the packages on its left, except the
// programs at the top (topPackage), which may import any public package.
// A package's own tests are not bound: only what a program links is.
//
// wazero, the WebAssembly runtime, is one name here: a package that
// imports any of github.com/tetratelabs/wazero imports "wazero". It sits
// under wasmhost alone, so that only a program that wires a guest runner
// (the plugkit command, the examples, wasmhost's own tests) links it.
//
// A new package goes into the layer it belongs to; an import the rules
// refuse means the package reaches above its layer: move the shared
// piece down (the wire's facts into wire, say) rather than widening the
// rule.
const depsRules = `
	# Leaves: they import no package of the module.
	NONE
	< wire, handshake, automtls, compat,
	  internal/osdep, internal/filehash, internal/goplugin/pluginpb,
	  internal/guestconn, internal/guestcall, internal/tracehook, internal/tracewire,
	  internal/reflectcall, internal/genfresh,
	  internal/hostwire, internal/tlsfiles,
	  gen/plugkit/catalog/v1,
	  protocheck/report, protocheck/ruleset,
	  internal/testutil, internal/testpki, internal/netnstest,
	  wazero,
	  bench, deploy/kubernetes, faults, interop, remote, sdk, sdk/sdktest;

	# The plumbing both sides share.
	internal/osdep < internal/listen;
	internal/goplugin/pluginpb, internal/listen < internal/brokerwire < broker;
	internal/tracehook < internal/traceenv < plugin/traceexport;
	handshake < internal/debugline;

	# The plugin side: it never imports the host side.
	wire, handshake, automtls, broker, internal/guestconn, internal/guestcall,
	internal/tracehook, internal/tracewire, internal/debugline
	< plugin;
	plugin, gen/plugkit/catalog/v1 < catalog;
	plugin < tfserve;

	# The host side: it never imports the plugin side.
	wire, handshake, automtls, broker, internal/filehash, internal/guestconn,
	internal/guestcall, internal/tracewire, internal/hostwire
	< host;
	internal/osdep < sandbox/internal/trampoline;
	host, sandbox/internal/trampoline < sandbox;

	# The guest runner, the one home of wazero.
	host, wazero < wasmhost;

	# Kinds on the host side. No wasmhost here: a program passes a guest
	# runner (host.GuestRunner) if it wants one.
	host, gen/plugkit/catalog/v1 < describe;
	describe, compat, internal/tlsfiles < manager, release;
	manager < conformance;
	manager, catalog, internal/testutil < plugintest;

	# Protocol files.
	protocheck/ruleset < protocheck/bufconfig;
	protocheck/bufconfig, protocheck/report < protocheck/load;
	protocheck/load < protocheck;
	protocheck < internal/kindgen, internal/protocli;

	# Test infrastructure.
	internal/testutil < internal/registrytest;
	internal/testutil, wazero < internal/testutil/wazeroversion;
	plugin, internal/testpki < internal/remotetest;

	# Commands. The plugkit command wires the guest runner, and its demo
	# runs the example kind (at the top, checked by topPackage).
	internal/kindgen < cmd/protoc-gen-plugkit;
	internal/protocli < cmd/plugkit-proto;
	release, conformance, wasmhost, internal/protocli,
	internal/reflectcall, internal/traceenv, internal/debugline,
	examples/objectstore
	< cmd/plugkit;
`

// topPackage reports whether rel is a program or example at the top of
// the layers: the examples, the benchmarks' code, the tools of the
// module and of the SDKs. They may import any package of the module,
// but an example no internal one (it imports only what a user can).
func topPackage(rel string) bool {
	for _, prefix := range []string{"examples/", "bench/", "internal/tools/", "sdk/cmd/"} {
		if strings.HasPrefix(rel, prefix) {
			return true
		}
	}
	return false
}

// TestDepsRules checks every import of every non-test file of the
// module, whatever its build constraints, against depsRules.
func TestDepsRules(t *testing.T) {
	allowed, err := parseDepsRules(depsRules, topPackage)
	if err != nil {
		t.Fatalf("depsRules: %v", err)
	}
	imports := moduleImports(t)
	for _, pkg := range slices.Sorted(mapKeys(imports)) {
		if pkg == "." {
			continue // the map: doc.go only
		}
		if topPackage(pkg) {
			for _, imp := range imports[pkg] {
				if strings.HasPrefix(pkg, "examples/") && slices.Contains(strings.Split(imp, "/"), "internal") {
					t.Errorf("%s imports %s: an example imports only what a user can, and no internal package: use a public package, or make the piece it needs public", pkg, imp)
				}
			}
			continue
		}
		below, ok := allowed[pkg]
		if !ok {
			t.Errorf("package %s is in no rule of depsRules: add it to the layer it belongs to (on the right of one rule)", pkg)
			continue
		}
		for _, imp := range imports[pkg] {
			if below[imp] {
				continue
			}
			t.Errorf("%s imports %s, which depsRules does not allow: it reaches above its layer; move what it needs into a package below it (or, if the layers themselves are wrong, change depsRules and say why)", pkg, imp)
		}
	}
	for pkg := range allowed {
		if pkg != "wazero" && imports[pkg] == nil {
			if _, err := os.Stat(filepath.FromSlash(pkg)); err != nil {
				t.Errorf("depsRules names %s, which is not a package of the module: remove it", pkg)
			}
		}
	}
}

// mapKeys returns m's keys, for slices.Sorted.
func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// moduleImports returns, for every package directory of the module
// (slash-separated, from the root), what its non-test files import of
// the module (as paths from the root) and "wazero" for any package of
// wazero. Every file counts, whatever its build constraints, as in Go's
// own deps test, so that one system's files cannot hide an import.
func moduleImports(t *testing.T) map[string][]string {
	t.Helper()
	imports := map[string][]string{}
	for dir, files := range goPackages(t) {
		dir = filepath.ToSlash(dir)
		imports[dir] = []string{}
		for _, pf := range files {
			for _, spec := range pf.file.Imports {
				path := strings.Trim(spec.Path.Value, `"`)
				var imp string
				switch {
				case strings.HasPrefix(path, modulePath+"/"):
					imp = strings.TrimPrefix(path, modulePath+"/")
				case path == "github.com/tetratelabs/wazero" || strings.HasPrefix(path, "github.com/tetratelabs/wazero/"):
					imp = "wazero"
				default:
					continue
				}
				if !slices.Contains(imports[dir], imp) {
					imports[dir] = append(imports[dir], imp)
				}
			}
		}
	}
	return imports
}

// parseDepsRules reads rules in depsRules' form and returns, for each
// package, the set of packages it may import. A name for which top is
// true may stand on the left of a rule without one of its own.
func parseDepsRules(rules string, top func(string) bool) (map[string]map[string]bool, error) {
	allowed := map[string]map[string]bool{}
	var lines []string
	for _, line := range strings.Split(rules, "\n") {
		line, _, _ = strings.Cut(line, "#")
		lines = append(lines, line)
	}
	for _, rule := range strings.Split(strings.Join(lines, " "), ";") {
		if strings.TrimSpace(rule) == "" {
			continue
		}
		lists := strings.Split(rule, "<")
		if len(lists) < 2 {
			return nil, fmt.Errorf("rule %q has no <", strings.Join(strings.Fields(rule), " "))
		}
		var below []string
		for i, list := range lists {
			var names []string
			for _, n := range strings.Split(list, ",") {
				n = strings.TrimSpace(n)
				if n == "" {
					return nil, fmt.Errorf("rule %q has an empty name", strings.Join(strings.Fields(rule), " "))
				}
				if n != "NONE" {
					names = append(names, n)
				} else if i != 0 || len(strings.Split(list, ",")) != 1 {
					return nil, fmt.Errorf("rule %q: NONE stands alone, first", strings.Join(strings.Fields(rule), " "))
				}
			}
			if i > 0 {
				for _, n := range names {
					if _, ok := allowed[n]; ok {
						return nil, fmt.Errorf("%s is on the right of two rules: give it one", n)
					}
					set := map[string]bool{}
					for _, b := range below {
						set[b] = true
						for x := range allowed[b] {
							set[x] = true
						}
					}
					allowed[n] = set
				}
			}
			for _, n := range names {
				if _, ok := allowed[n]; !ok && !top(n) {
					return nil, fmt.Errorf("%s is used before a rule puts it on its right: order the rules from the bottom up", n)
				}
			}
			below = names
		}
	}
	return allowed, nil
}

// TestParseDepsRules checks the reading of the rules themselves: a chain
// passes its lower layers up, and a rule out of order or a package on
// the right of two rules is refused.
func TestParseDepsRules(t *testing.T) {
	none := func(string) bool { return false }
	allowed, err := parseDepsRules("NONE < a, b; # leaves\n a < c < d; b, d < e", none)
	if err != nil {
		t.Fatal(err)
	}
	for pkg, want := range map[string][]string{"a": nil, "c": {"a"}, "d": {"a", "c"}, "e": {"a", "b", "c", "d"}} {
		if got := slices.Sorted(mapKeys(allowed[pkg])); !slices.Equal(got, want) {
			t.Errorf("%s may import %v, want %v", pkg, got, want)
		}
	}
	for rules, want := range map[string]string{
		"a < b":                 "a is used before",
		"NONE < a; NONE < a":    "a is on the right of two rules",
		"NONE < a; a":           "has no <",
		"NONE < a; a, < b":      "an empty name",
		"NONE < a; a, NONE < b": "NONE stands alone",
	} {
		if _, err := parseDepsRules(rules, none); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("parseDepsRules(%q) = %v, want an error saying %q", rules, err, want)
		}
	}
}
