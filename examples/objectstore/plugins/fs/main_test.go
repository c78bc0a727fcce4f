package main

import (
	"context"
	"testing"
	"time"

	"github.com/plugkit/plugkit/examples/objectstore"
	"github.com/plugkit/plugkit/plugintest"
)

// TestFSConformance runs the v2 suite (with the presign capability of
// 2.1) and the v1 suite on the fs plugin, served in-process.
func TestFSConformance(t *testing.T) {
	cat, err := newCatalog()
	if err != nil {
		t.Fatal(err)
	}
	m := plugintest.ServeCatalog(t, cat)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := objectstore.Open(ctx, m, "example.com/fs")
	if err != nil {
		t.Fatal(err)
	}
	if info := s.Info(); info.Major != 2 || info.Minor != 1 || info.Adapted || !info.Has(objectstore.CapPresign) {
		t.Errorf("info %+v: want objectstore 2.1 direct, with %q", info, objectstore.CapPresign)
	}
	t.Run("v2", func(t *testing.T) { objectstore.SuiteV2().Test(t, s) })
	s1, err := objectstore.OpenV1(ctx, m, "example.com/fs")
	if err != nil {
		t.Fatal(err)
	}
	t.Run("v1", func(t *testing.T) { objectstore.SuiteV1().Test(t, s1) })
}
