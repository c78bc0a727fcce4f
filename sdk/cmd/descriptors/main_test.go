package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestDescriptorsFresh fails when the SDKs' committed
// descriptor modules differ from what the Go descriptors give now: run
// go run ./sdk/cmd/descriptors.
func TestDescriptorsFresh(t *testing.T) {
	for _, o := range outputs() {
		want, err := render(o)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join("..", "..", "..", filepath.FromSlash(o.path)))
		if err != nil {
			t.Fatalf("%v: run go run ./sdk/cmd/descriptors from the repository root", err)
		}
		if string(got) != want {
			t.Errorf("%s is stale: run go run ./sdk/cmd/descriptors from the repository root", o.path)
		}
	}
}
