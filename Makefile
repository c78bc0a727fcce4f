# plugkit's tasks. Everything a target needs is pinned here and fetched by
# the Go toolchain itself; nothing is installed by hand.
GO        ?= go
BUF       := github.com/bufbuild/buf/cmd/buf@v1.75.0
GOFLAGS   ?=
export GOFLAGS

.PHONY: all test vet fmt-check demo generate generate-check bench

all: test

## test: every test, with the race detector, plus gofmt and go vet
test: fmt-check vet
	$(GO) test -race -count=1 -timeout 9m ./...

vet:
	$(GO) vet ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

## demo: build the example plugin and use it through the host
demo:
	$(GO) run ./cmd/plugkit demo

## generate: regenerate Go code from the .proto files with buf
generate:
	$(GO) run $(BUF) generate
	$(GO) run ./internal/tools/privatize internal/goplugin/pluginpb

## bench: benchmarks (not part of make test)
bench:
	$(GO) test -run '^$$' -bench . -benchmem -count 6 ./...
