# plugkit's tasks. Everything a target needs is pinned here and fetched by
# the Go toolchain itself; nothing is installed by hand.
GO        ?= go
BUF       := github.com/bufbuild/buf/cmd/buf@v1.75.0
GOFLAGS   ?=
export GOFLAGS

.PHONY: all test test-compile staticcheck-after-plugins compile-race compile-plugins compile-wasm test-go lint-testdata test-tofu test-windows test-sdk test-corpus tofu vet lint cross fmt-check demo generate generate-check bench bench-proto soak fuzz

all: test

## test: every test, with the race detector, plus gofmt, go vet and
## staticcheck, in two steps so that a cold build cache compiles nothing
## twice (go commands that run at once each compile what they need, even
## the same package): test-compile first, beside staticcheck's own build
## (which waits for compile-plugins: both compile the standard library
## without the race detector and with -trimpath, and at once each would
## compile it);
## then the tests (test-go, go vet with them) beside staticcheck's run,
## both of which find their compiles done. The vets for other systems
## (make cross) and the end-to-end tests against OpenTofu (make test-tofu:
## a cold build of OpenTofu is minutes of both CPUs) are .ci/run's, not
## this target's.
test: fmt-check
	@$(MAKE) --no-print-directory --output-sync=line -j4 test-compile staticcheck-after-plugins
	@$(MAKE) --no-print-directory --output-sync=line -j2 lint test-go
staticcheck-after-plugins: compile-plugins
	@$(MAKE) --no-print-directory $(STATICCHECK)

## test-compile: what make test compiles before its tests start, each
## build configuration once and without linking (go list -export): the
## packages and their tests with the race detector, as go test and, in
## make test, go vet and staticcheck use them (compile-race); the
## dependencies of the module's commands and plugins as the tests build
## them, and of the registry program internal/registrytest starts (under
## testdata, so ./... leaves it out), without it (compile-plugins: with
## -trimpath, as testutil.GoBuild and every go command the tests start
## build, through testutil.Main's GOFLAGS: a compile keyed by the module,
## not by the directory, serves as well the docs' commands, which run in a
## clone of the checkout); and of the
## WebAssembly plugins (compile-wasm: testutil.BuildWasm's GOOS, GOARCH,
## -trimpath and tags). On a warm cache it costs seconds.
test-compile: compile-race compile-plugins compile-wasm
compile-race:
	$(GO) list -export -race -test -deps ./... >/dev/null
compile-plugins:
	$(GO) list -export -deps -trimpath $$($(GO) list -f '{{if eq .Name "main"}}{{.ImportPath}}{{end}}' ./...) ./internal/registrytest/testdata/registry >/dev/null
compile-wasm:
	GOOS=wasip1 GOARCH=wasm $(GO) list -export -deps -trimpath -tags grpcnotrace ./examples/objectstore/plugins/... >/dev/null

## test-go: the Go tests alone (make test runs them beside lint), and go
## vet with every analyzer on each package as they compile it (-vet=all:
## the race detector's build, the one the tests run), TESTP packages at
## a time: twice the CPUs by default, since many tests wait on plugin
## processes, sockets and deadlines rather than compute (at go test's
## default, one package per CPU, the CPUs were idle for part of the run);
## TESTP=N sets it. A package's tests get 15 minutes (-timeout), the bound of a hang: on a fresh
## machine under load, cmd/plugkit's ran past 9, its plugins and guests
## compiled on first use. The test binaries are linked without DWARF
## (-ldflags=-w): panics, race reports and stack traces read the
## binary's own line tables, not DWARF, and the linker's DWARF phases
## were about a third of a race test binary's link (manager's, measured
## with -ldflags=-benchmark=cpu), on every run. They are kept in
## $(TESTBIN) (go test -o), so that a later run links again only the
## packages whose build changed: go test otherwise links every test binary
## anew into a scratch directory, about 70 CPU-s of each warm run. One
## directory cannot hold two packages' binaries of the same name (the
## module's root and cmd/plugkit are both plugkit.test; a package whose
## path ends in a major version from v2 up is named after its parent),
## so each name's first package goes to the go test command that runs
## TESTP packages at a time, and the few others to one more at a time
## beside it, in directories of their own.
## TESTFIRST names the packages go test starts first (it starts them in
## the order given): wasmhost's tests are the longest and mostly one
## after another, and in go test's own order (alphabetical) they started
## last and ran alone at the end.
TESTFIRST ?= ./wasmhost
TESTP ?= $(shell n=$$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1); echo $$((n * 2)))
TESTBIN ?= bin/test
TESTFLAGS := -race -vet=all -ldflags=-w -count=1 -timeout 15m
test-go:
	@rm -rf $(TESTBIN)/pkgs && mkdir -p $(TESTBIN)/pkgs
	@$(GO) list $(TESTFIRST) ./... | awk -F/ '!listed[$$0]++ { n = $$NF; if (n ~ /^v[0-9]+$$/ && substr(n, 2) + 0 >= 2) n = $$(NF-1); print > "$(TESTBIN)/pkgs/" seen[n]++ }'
	$(GO) test $(TESTFLAGS) -p $(TESTP) -o $(TESTBIN)/0/ $$(cat $(TESTBIN)/pkgs/0) & first=$$!; s=0; \
	for k in $$(ls $(TESTBIN)/pkgs | sort -n | sed 1d); do \
		$(GO) test $(TESTFLAGS) -p 1 -o $(TESTBIN)/$$k/ $$(cat $(TESTBIN)/pkgs/$$k) || s=1; \
	done; \
	wait $$first && exit $$s

## test-tofu: the end-to-end tests of the Terraform provider example
## against real engines (examples/terraform/provider, build tag tofu):
## OpenTofu always, built first (make tofu), and the Terraform CLI as well
## when it is on PATH. .ci/run runs it after make test.
test-tofu: tofu
	PLUGKIT_TOFU=$(abspath $(TOFU)) $(GO) test -race -count=1 -tags tofu -run '^TestEngine' ./examples/terraform/provider

## tofu: OpenTofu, the engine the Terraform end-to-end test always runs,
## built from its Go module by the tools module internal/tools/tofu (pinned
## there; `go install` refuses it because of its hcl replace). Built once
## into bin/, rebuilt only when the tools module changes.
TOFU_VERSION := v1.12.6
TOFU         := bin/tofu-$(TOFU_VERSION)
tofu: $(TOFU)
$(TOFU): internal/tools/tofu/go.mod internal/tools/tofu/go.sum
	@mkdir -p bin
	cd internal/tools/tofu && GOWORK=off GOFLAGS= $(GO) build -o $(abspath $(TOFU)).tmp github.com/opentofu/opentofu/cmd/tofu
	mv $(abspath $(TOFU)).tmp $(TOFU)

## test-sdk: the SDKs for plugins in other languages (sdk/): their own
## tests, then the Go side's proof against their example plugins, next to
## the Go example plugins (package sdk/sdktest, build tag sdk): plugkit
## plugins list, the manager directly and through the v1->v2 adapter, the
## conformance suites and the compatibility matrix; and a kind the SDKs
## have never seen (sdk/sdktest/testdata/thermostat), its image built with
## the pinned buf, served by plugins that import the SDKs installed as
## their READMEs say (pip into a venv, npm from the packed tarball, both in
## a temporary directory removed after). It runs npm ci in sdk/node (the
## examples' packages) and needs /usr/bin/python3 with Debian's grpcio, protobuf,
## setuptools, wheel and venv (apt-get install python3-grpcio
## python3-protobuf python3-setuptools python3-wheel python3-venv), Node 18
## or newer with npm, and the npm registry; .ci/run installs them.
test-sdk:
	cd sdk/node && npm ci --no-audit --no-fund
	cd sdk/node && node --test test/sdk.test.js
	$(GO) test -race -count=1 -timeout 30m -tags sdk ./sdk/...

## test-corpus: the tests that read the shared corpus beside the clone
## (../shared/corpus: Terraform's protocol history, buf's breaking fixtures).
## Such tests live in *_corpus_test.go files behind the corpus build tag and
## are named TestCorpus...; make test never reads ../shared.
SHARED ?= ../shared
test-corpus:
	@test -d $(SHARED)/corpus || { echo "make test-corpus: $(SHARED)/corpus is missing (it expects the shared test corpus checked out beside the repository; set SHARED=DIR to point elsewhere)"; exit 1; }
	PLUGKIT_SHARED=$$(cd $(SHARED) && pwd) $(GO) test -race -count=1 -tags corpus -run '^TestCorpus' \
		$$(find . -name '*_corpus_test.go' -not -path './.git/*' | xargs -n1 dirname | sort -u)

vet:
	$(GO) vet ./...

## lint: staticcheck over the module, tests and the build tags of
## test-sdk, test-corpus and test-tofu included, with its default checks,
## on the race detector's build (the one the tests run, so that make test
## compiles the packages once for both); built
## from the tools module internal/tools/staticcheck (pinned there) into
## bin/ once, rebuilt only when the tools module changes. A finding that
## is right to keep gets a //lint:ignore CHECK reason on its line.
STATICCHECK_VERSION := v0.8.2
STATICCHECK         := bin/staticcheck-$(STATICCHECK_VERSION)
lint: $(STATICCHECK)
	GOFLAGS="$$($(GO) env GOFLAGS) -race" $(STATICCHECK) -tags corpus,sdk,tofu ./...
$(STATICCHECK): internal/tools/staticcheck/go.mod internal/tools/staticcheck/go.sum
	@mkdir -p bin
	@grep -q 'honnef.co/go/tools $(STATICCHECK_VERSION) ' internal/tools/staticcheck/go.mod || { echo "make lint: internal/tools/staticcheck/go.mod does not pin honnef.co/go/tools $(STATICCHECK_VERSION): update STATICCHECK_VERSION in the Makefile with it"; exit 1; }
	cd internal/tools/staticcheck && GOWORK=off GOFLAGS=-trimpath $(GO) build -o $(abspath $(STATICCHECK)).tmp honnef.co/go/tools/cmd/staticcheck
	mv $(abspath $(STATICCHECK)).tmp $(STATICCHECK)

## lint-testdata: go vet (every analyzer) and staticcheck over the
## programs under testdata directories, which ./... leaves out, and so make
## test's vet and lint: the registry that internal/registrytest starts, the
## plugins and hosts that tests build. Found anew each run: every testdata
## directory of this module whose package is a main package that builds
## here (a WebAssembly-only guest does not), checked as the tests build
## them, without the race detector and with -trimpath (so that, after make
## test, it finds their compiles done). .ci/run runs it after make test; make
## test does not, since cold it analyses the registry's dependencies and
## the standard library once more without the race detector (BENCHMARKS.md,
## "make test, cold: round 3").
TESTDATA_PROGRAMS = $$($(GO) list -e -f '{{if and (eq .Name "main") (not .Error)}}{{.ImportPath}}{{end}}' \
	$$(find . -path ./.git -prune -o -path '*/node_modules' -prune -o -path '*/testdata/*.go' -print | xargs -n1 dirname | sort -u))
lint-testdata: $(STATICCHECK)
	@pkgs="$(TESTDATA_PROGRAMS)"; test -n "$$pkgs" || { echo "make lint-testdata: found no program under testdata"; exit 1; }; \
	echo "go vet and staticcheck over:" $$pkgs; \
	export GOFLAGS="$$($(GO) env GOFLAGS) -trimpath"; \
	$(GO) vet $$pkgs && $(STATICCHECK) $$pkgs

## cross: build and vet the module, test files included, for the other
## systems plugkit supports (go vet type-checks every package and its
## tests for GOOS/GOARCH), so that nothing unix-only slips into Windows
## and nothing Linux-only into macOS or FreeBSD. .ci/run runs it after
## make test (cold, each system's standard library and modules build
## anew: about 3 minutes a system on 2 CPUs).
CROSS ?= windows/amd64 darwin/arm64 darwin/amd64 freebsd/amd64
cross:
	@set -e; for p in $(CROSS); do \
		echo "go vet ./... for $$p"; \
		GOOS=$${p%/*} GOARCH=$${p#*/} $(GO) vet ./...; \
	done

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

## demo: build the example plugin and use it through the host; plugkit
## itself is built first into bin/, saying so (a cold build takes a
## minute or two), and the demo names each plugin it builds
demo:
	@mkdir -p bin
	@echo "make demo: building cmd/plugkit into bin/plugkit (a first build takes a minute or two)"
	$(GO) build -o bin/plugkit ./cmd/plugkit
	bin/plugkit demo
	bin/plugkit release demo

## generate: regenerate Go code from the .proto files with buf, then the
## example kinds' glue with protoc-gen-plugkit (buf.gen.kinds.yaml; the
## kv example is a module of its own: see examples/kv/README.md)
## buf and the generators it runs are built once into bin/ (named by
## version, so a new pin builds anew), each saying so before it starts:
## a cold build of buf takes minutes. protoc-gen-plugkit is built from
## this checkout on every run (seconds when the build cache is warm).
KINDS := examples/greeter/proto examples/objectstore/proto internal/kindgen/testdata/notifier/proto
BUF_BIN := bin/buf-$(lastword $(subst @, ,$(BUF)))
PROTOC_GEN_GO      := google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
PROTOC_GEN_GO_GRPC := google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2
PROTOC_GEN_GO_BIN      := bin/protoc-gen-go-$(lastword $(subst @, ,$(PROTOC_GEN_GO)))
PROTOC_GEN_GO_GRPC_BIN := bin/protoc-gen-go-grpc-$(lastword $(subst @, ,$(PROTOC_GEN_GO_GRPC)))
$(BUF_BIN):
	@$(MAKE) --no-print-directory gen-tool TOOL=$(BUF) OUT=$@
$(PROTOC_GEN_GO_BIN):
	@$(MAKE) --no-print-directory gen-tool TOOL=$(PROTOC_GEN_GO) OUT=$@
$(PROTOC_GEN_GO_GRPC_BIN):
	@$(MAKE) --no-print-directory gen-tool TOOL=$(PROTOC_GEN_GO_GRPC) OUT=$@
.PHONY: gen-tool
gen-tool:
	@echo "make: building $(TOOL) into $(OUT), once (a first build can take minutes)"
	@rm -rf bin/.gen-tool && mkdir -p bin/.gen-tool
	GOBIN=$(abspath bin/.gen-tool) GOFLAGS= $(GO) install $(TOOL)
	mv bin/.gen-tool/* $(OUT) && rm -rf bin/.gen-tool
generate: $(BUF_BIN) $(PROTOC_GEN_GO_BIN) $(PROTOC_GEN_GO_GRPC_BIN)
	@echo "make generate: building cmd/protoc-gen-plugkit into bin/"
	$(GO) build -o bin/protoc-gen-plugkit ./cmd/protoc-gen-plugkit
	@rm -rf bin/.gen && mkdir -p bin/.gen
	ln -sf ../$(notdir $(PROTOC_GEN_GO_BIN)) bin/.gen/protoc-gen-go
	ln -sf ../$(notdir $(PROTOC_GEN_GO_GRPC_BIN)) bin/.gen/protoc-gen-go-grpc
	ln -sf ../protoc-gen-plugkit bin/.gen/protoc-gen-plugkit
	PATH="$(abspath bin/.gen):$$PATH" $(BUF_BIN) generate
	for k in $(KINDS); do PATH="$(abspath bin/.gen):$$PATH" $(BUF_BIN) generate --template buf.gen.kinds.yaml $$k || exit 1; done
	$(GO) run ./internal/tools/privatize internal/goplugin/pluginpb

## generate-check: fail when the committed generated code is stale
generate-check: generate
	git diff --exit-code -- '*.pb.go'
	@test -z "$$(git status --porcelain -- '*.pb.go')" || { git status --short -- '*.pb.go'; echo "make generate-check: new generated files are not committed"; exit 1; }

## bench-proto: protocheck against buf breaking on the tfplugin pairs and,
## one CLI process per pair, on protocheck's own multi-file history
## (BenchmarkHistoryCLI reports buf/plugkit; installs the pinned buf, which
## make test never needs)
bench-proto:
	$(GO) install $(BUF)
	PATH="$$($(GO) env GOPATH)/bin:$$PATH" $(GO) test -tags corpus ./protocheck -run '^$$' -bench 'BreakingTfplugin|History' -benchtime 5x -count 6

## bench: plugkit against go-plugin and grpc-go (not part of make test):
## medians of several runs into BENCHMARKS.md and bench/results.json
bench:
	$(GO) run ./bench/cmd/report $(BENCHFLAGS)

## fuzz: every Go fuzz target of the module (func FuzzXxx(f *testing.F) in
## any package's tests, found anew on each run, so new targets join without
## an edit here), one at a time, each for FUZZTIME; not part of make test,
## which runs only their seed corpora (f.Add and testdata/fuzz/FuzzXxx).
## A failing input is written to the package's testdata/fuzz/FuzzXxx:
## fix the bug and commit the file as a regression seed. FUZZMINIMIZETIME
## bounds the shrinking of each new input (Go's default, 60s, can eat the
## whole budget); FUZZFLAGS adds flags, such as -parallel 1; FUZZPKGS
## narrows the packages (make fuzz FUZZPKGS=./host).
FUZZTIME         ?= 30s
FUZZMINIMIZETIME ?= 2000x
FUZZFLAGS        ?=
FUZZPKGS         ?= ./...
fuzz:
	@failed=; for dir in $$($(GO) list -f '{{.Dir}}' $(FUZZPKGS)); do \
		grep -qsE '^func Fuzz' $$dir/*_test.go || continue; \
		fns=$$(cd $$dir && $(GO) test -list '^Fuzz' .) || { echo "$$fns"; failed="$$failed $$dir"; continue; }; \
		for fn in $$(echo "$$fns" | grep -E '^Fuzz'); do \
			echo "== $$fn ($$dir) for $(FUZZTIME)"; \
			(cd $$dir && $(GO) test -run '^$$' -fuzz "^$$fn\$$" -fuzztime $(FUZZTIME) \
				-fuzzminimizetime $(FUZZMINIMIZETIME) $(FUZZFLAGS) .) || failed="$$failed $$fn"; \
		done; \
	done; \
	if [ -n "$$failed" ]; then echo "make fuzz: failed:$$failed"; exit 1; fi

## soak: the fault suite's long cases (1 million calls from 1000 goroutines)
soak:
	PLUGKIT_SOAK=1 $(GO) test -count=1 -timeout 30m -run 'Soak|ManyCalls' -v ./faults/

## test-windows: every package's tests built for windows/amd64 and run
## under Wine (internal/tools/wintest), the plugins they start being
## Windows binaries too; no race detector. It installs nothing: it needs
## wine (Debian: wine and wine64) and a MinGW compiler for the ProcessPrng shim
## (Debian: gcc-mingw-w64-x86-64); .ci/run installs them. WINTESTFLAGS
## adds flags (-timeout per package, -run, -v) and packages.
WINTESTFLAGS ?=
test-windows:
	$(GO) run ./internal/tools/wintest $(WINTESTFLAGS)
