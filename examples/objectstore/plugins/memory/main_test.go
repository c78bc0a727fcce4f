package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/plugkit/plugkit/examples/objectstore"
	"github.com/plugkit/plugkit/plugintest"
)

// TestMemoryInProcess serves the plugin's catalog inside the test, without
// building the binary, and uses it through the host's typed client: a
// v1-only store, which a v2 host reaches through its adapter.
func TestMemoryInProcess(t *testing.T) {
	cat, err := newCatalog()
	if err != nil {
		t.Fatal(err)
	}
	m := plugintest.ServeCatalog(t, cat)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := objectstore.Open(ctx, m, "example.com/memory")
	if err != nil {
		t.Fatal(err)
	}
	if info := s.Info(); info.Major != 1 || !info.Adapted || info.PluginVersion != version {
		t.Errorf("info %+v: want v%s, major 1 through the adapter", info, version)
	}
	if err := s.Put(ctx, "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get(ctx, "k"); err != nil || !bytes.Equal(got, []byte("v")) {
		t.Errorf("Get = %q, %v", got, err)
	}
	if st, err := s.Stat(ctx, "k"); err != nil || st.Size != 1 {
		t.Errorf("Stat through the adapter = %+v, %v", st, err)
	}
}
