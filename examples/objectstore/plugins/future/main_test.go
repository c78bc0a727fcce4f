package main

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/plugkit/plugkit/examples/objectstore"
	"github.com/plugkit/plugkit/manager"
	"github.com/plugkit/plugkit/plugintest"
)

// TestFutureConformance runs the v3 suite on the future plugin, served
// in-process, and checks that today's v2 host refuses it.
func TestFutureConformance(t *testing.T) {
	cat, err := newCatalog()
	if err != nil {
		t.Fatal(err)
	}
	m := plugintest.ServeCatalog(t, cat)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := objectstore.OpenV3(ctx, m, "example.com/future")
	if err != nil {
		t.Fatal(err)
	}
	objectstore.SuiteV3().Test(t, s)
	var ie *manager.IncompatibleError
	if _, err := objectstore.Open(ctx, m, "example.com/future"); !errors.As(err, &ie) {
		t.Errorf("a v2 host opened the v3-only plugin: %v", err)
	}
}
