//go:build corpus

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCorpusProtoHistoryCLI runs plugkit proto history on the shared tfplugin
// history: clean in plugkit mode, the two ServerCapabilities findings in
// buf-compatible mode.
func TestCorpusProtoHistoryCLI(t *testing.T) {
	shared := os.Getenv("PLUGKIT_SHARED")
	if shared == "" {
		shared = filepath.Join("..", "..", "..", "shared")
	}
	corpus := filepath.Join(shared, "corpus", "terraform")
	if _, err := os.Stat(corpus); err != nil {
		t.Fatalf("the shared test corpus is missing at %s: %v", corpus, err)
	}
	if code, out, errs := runCLI("proto", "history", corpus); code != 0 || out != "" {
		t.Errorf("history: %d %q %q", code, out, errs)
	}
	code, out, _ := runCLI("proto", "history", corpus, "--buf-compat", "--error-format", "json")
	if code != 100 || strings.Count(out, "\n") != 2 || !strings.Contains(out, "FIELD_WIRE_JSON_COMPATIBLE_TYPE") {
		t.Errorf("history --buf-compat: %d %q", code, out)
	}
}
