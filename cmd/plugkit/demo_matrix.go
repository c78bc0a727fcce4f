package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/plugkit/plugkit/conformance"
	"github.com/plugkit/plugkit/examples/objectstore"
	"github.com/plugkit/plugkit/wasmhost"
)

// demoMatrix ends the demo with the compatibility matrix over its
// plugins: every plugin against every host major (v2 with its adapter, v1),
// each cell running the objectstore conformance suite.
func demoMatrix(ctx context.Context, out io.Writer, step demoStep, pluginDir string) error {
	step("the compatibility matrix: every plugin against every host major, each cell running the objectstore conformance suite (objectstore-matrix --dir %s)", pluginDir)
	guests := wasmhost.New(wasmhost.Config{})
	defer guests.Close(context.Background())
	mx := conformance.Matrix{
		Kind:     objectstore.Kind,
		Cookie:   objectstore.Cookie,
		Hosts:    objectstore.MatrixHosts(false),
		Releases: objectstore.Releases(),
		Guests:   guests,
	}
	start := time.Now()
	cells, err := mx.Run(ctx, pluginDir)
	if err != nil {
		return err
	}
	elapsed := time.Since(start)
	if err := conformance.WriteText(indent(out), cells); err != nil {
		return err
	}
	fmt.Fprintf(out, "\n    %d cells in %v (one process per binary, started once to describe it and reused across host majors; binaries in parallel)\n", len(cells), elapsed.Round(time.Millisecond))
	if conformance.Failing(cells) {
		return fmt.Errorf("the matrix has failing cells")
	}
	return nil
}
