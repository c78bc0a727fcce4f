package main

import (
	"context"
	"testing"
	"time"

	"example.com/kv"
	kvv1 "example.com/kv/gen/kv/v1"
	kvv2 "example.com/kv/gen/kv/v2"
	"github.com/plugkit/plugkit/plugintest"
)

// TestConformance runs the suites in-process, through the adapter too.
func TestConformance(t *testing.T) {
	cat, err := newCatalog()
	if err != nil {
		t.Fatal(err)
	}
	m := plugintest.ServeCatalog(t, cat)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	mem, err := kvv2.Open(ctx, m, "example.com/mem", kv.Adapters)
	memv1, err2 := kvv2.Open(ctx, m, "example.com/memv1", kv.Adapters)
	v1, err3 := kvv1.Open(ctx, m, "example.com/memv1")
	if err != nil || err2 != nil || err3 != nil {
		t.Fatal(err, err2, err3)
	}
	t.Run("mem v2", func(t *testing.T) { kv.SuiteV2().Test(t, mem) })
	t.Run("memv1 v2 through the adapter", func(t *testing.T) { kv.SuiteV2().Test(t, memv1) })
	t.Run("memv1 v1", func(t *testing.T) { kv.SuiteV1().Test(t, v1) })
}
