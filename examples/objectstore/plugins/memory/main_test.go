package main

import (
	"context"
	"testing"
	"time"

	"github.com/plugkit/plugkit/examples/objectstore"
	"github.com/plugkit/plugkit/plugintest"
)

// TestMemoryConformance serves the plugin's catalog inside the test,
// without building the binary, and runs the objectstore conformance
// suites through the host's typed clients: v2 through the v1->v2 adapter,
// and v1 as a v1 host uses it.
func TestMemoryConformance(t *testing.T) {
	cat, err := newCatalog()
	if err != nil {
		t.Fatal(err)
	}
	m := plugintest.ServeCatalog(t, cat)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := objectstore.Open(ctx, m, "example.com/memory")
	if err != nil {
		t.Fatal(err)
	}
	if info := s.Info(); info.Major != 1 || !info.Adapted || info.PluginVersion != version {
		t.Errorf("info %+v: want v%s, major 1 through the adapter", info, version)
	}
	t.Run("v2 through the adapter", func(t *testing.T) { objectstore.SuiteV2().Test(t, s) })
	s1, err := objectstore.OpenV1(ctx, m, "example.com/memory")
	if err != nil {
		t.Fatal(err)
	}
	t.Run("v1", func(t *testing.T) { objectstore.SuiteV1().Test(t, s1) })
}
