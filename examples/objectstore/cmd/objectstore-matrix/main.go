// Command objectstore-matrix is the compatibility matrix of the example
// objectstore kind: it runs every plugin binary in a directory against
// every host major this repository's object-store host ships (v2, with its
// v1->v2 adapter, and v1), runs the kind's conformance suite in each cell,
// and prints which cells work directly, through the adapter, are
// incompatible (with the release to pick) or fail (with the failing cases).
// It builds nothing: it tests what is in the directory.
//
//	objectstore-matrix --dir DIR [--json | --markdown] [--releases FILE] [--v3] [--parallel N]
//
// The exit status is 0 when no cell fails, 1 when one does, 2 for bad
// usage. Incompatible cells are information, not failures.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/plugkit/plugkit/compat"
	"github.com/plugkit/plugkit/conformance"
	"github.com/plugkit/plugkit/examples/objectstore"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

const usage = "objectstore-matrix --dir DIR [--json | --markdown] [--releases FILE] [--v3] [--parallel N] [--timeout D]"

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("objectstore-matrix", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: %s\n\nflags:\n", usage)
		fs.PrintDefaults()
	}
	dir := fs.String("dir", "", "the `directory` of plugin binaries to test (required); nothing is built")
	asJSON := fs.Bool("json", false, "print one JSON object per cell (a JSON array)")
	asMarkdown := fs.Bool("markdown", false, "print a Markdown table, for a CI job summary")
	releases := fs.String("releases", "", "a release index `file` for the advice of incompatible cells (default: the examples' releases.json)")
	withV3 := fs.Bool("v3", false, "also test against the v3 preview host")
	parallel := fs.Int("parallel", 0, "binaries tested at once; 0 means the number of CPUs")
	timeout := fs.Duration("timeout", 5*time.Minute, "bound on the whole run")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *dir == "" || fs.NArg() > 0 || (*asJSON && *asMarkdown) {
		fmt.Fprintf(stderr, "objectstore-matrix: --dir is required, takes no arguments, and --json and --markdown exclude each other\nusage: %s\n", usage)
		return 2
	}
	ix := objectstore.Releases()
	if *releases != "" {
		var err error
		if ix, err = compat.LoadIndex(*releases); err != nil {
			fmt.Fprintf(stderr, "objectstore-matrix: %v\n", err)
			return 2
		}
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	mx := conformance.Matrix{
		Kind:        objectstore.Kind,
		Cookie:      objectstore.Cookie,
		Hosts:       objectstore.MatrixHosts(*withV3),
		Releases:    ix,
		Parallelism: *parallel,
	}
	start := time.Now()
	cells, err := mx.Run(ctx, *dir)
	if err != nil {
		fmt.Fprintf(stderr, "objectstore-matrix: %v\n", err)
		return 1
	}
	switch {
	case *asJSON:
		err = conformance.WriteJSON(stdout, cells)
	case *asMarkdown:
		err = conformance.WriteMarkdown(stdout, cells)
	default:
		err = conformance.WriteText(stdout, cells)
		fmt.Fprintf(stdout, "\n%d cells in %v\n", len(cells), time.Since(start).Round(time.Millisecond))
	}
	if err != nil {
		fmt.Fprintf(stderr, "objectstore-matrix: %v\n", err)
		return 1
	}
	if conformance.Failing(cells) {
		return 1
	}
	return 0
}
