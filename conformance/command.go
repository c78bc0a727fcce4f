package conformance

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/plugkit/plugkit/compat"
)

// Main is the whole matrix command of a kind: its main function is
//
//	func main() {
//		conformance.Main(conformance.Matrix{Kind: kvv2.Kind, Cookie: kvv2.Cookie, Hosts: kv.MatrixHosts()})
//	}
//
// It runs mx over the plugin binaries of --dir and prints the cells as a
// table, or as --json or --markdown; --releases names a release index for
// the advice of incompatible cells (default mx.Releases), --parallel and
// --timeout bound the run; a run that lasts over two seconds says so on
// stderr first, as nothing else is printed until the table. It exits with
// status 0 when no cell fails, 1 when one does, 2 for bad usage; SIGINT
// and SIGTERM end the run.
func Main(mx Matrix) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := Command(ctx, mx, filepath.Base(os.Args[0]), os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Command is Main without the process: it parses args as the command name
// would, runs mx, writes to stdout and stderr and returns the exit status.
func Command(ctx context.Context, mx Matrix, name string, args []string, stdout, stderr io.Writer) int {
	return CommandFlags(ctx, mx, name, args, stdout, stderr, nil)
}

// CommandFlags is Command for a matrix command with flags of its own:
// define adds them to fs before args are parsed, and the function it
// returns changes mx after (objectstore-matrix's --v3 adds a host that
// way) or refuses the flags' values with an error that says what to
// change, which ends the command with status 2. A nil define adds none.
func CommandFlags(ctx context.Context, mx Matrix, name string, args []string, stdout, stderr io.Writer, define func(fs *flag.FlagSet) func(*Matrix) error) int {
	usage := name + " --dir DIR [--json | --markdown] [--releases FILE] [--parallel N] [--timeout D]"
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: %s\n\nflags:\n", usage)
		fs.PrintDefaults()
	}
	dir := fs.String("dir", "", "the `directory` of plugin binaries to test (required); nothing is built")
	asJSON := fs.Bool("json", false, "print one JSON object per cell (a JSON array)")
	asMarkdown := fs.Bool("markdown", false, "print a Markdown table, for a CI job summary")
	releases := fs.String("releases", "", "a release index `file` for the advice of incompatible cells")
	fs.IntVar(&mx.Parallelism, "parallel", mx.Parallelism, "binaries tested at once; 0 means the number of CPUs")
	timeout := fs.Duration("timeout", 5*time.Minute, "bound on the whole run")
	apply := func(*Matrix) error { return nil }
	if define != nil {
		known := map[string]bool{}
		fs.VisitAll(func(f *flag.Flag) { known[f.Name] = true })
		apply = define(fs)
		fs.VisitAll(func(f *flag.Flag) { // the command's own flags, in the usage line too
			if !known[f.Name] {
				usage += " [--" + f.Name + "]"
			}
		})
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if err := apply(&mx); err != nil {
		fmt.Fprintf(stderr, "%s: %v\nusage: %s\n", name, err, usage)
		return 2
	}
	if *dir == "" || fs.NArg() > 0 || (*asJSON && *asMarkdown) {
		fmt.Fprintf(stderr, "%s: --dir is required, takes no arguments, and --json and --markdown exclude each other\nusage: %s\n", name, usage)
		return 2
	}
	if *releases != "" {
		ix, err := compat.LoadIndex(*releases)
		if err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", name, err)
			return 2
		}
		mx.Releases = ix
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	start := time.Now()
	said := make(chan struct{})
	slow := time.AfterFunc(slowRun, func() {
		defer close(said)
		fmt.Fprintf(stderr, "%s: testing the plugins in %s against %d host majors; the table follows when every cell has run (a WebAssembly module is compiled first, which can take a minute) ...\n", name, *dir, len(mx.Hosts))
	})
	cells, err := mx.Run(ctx, *dir)
	if !slow.Stop() {
		<-said // the notice is written: nothing else writes to stderr at once
	}
	if err == nil {
		err = writeCells(stdout, cells, *asJSON, *asMarkdown)
	}
	if err == nil && !*asJSON && !*asMarkdown {
		_, err = fmt.Fprintf(stdout, "\n%d cells in %v\n", len(cells), time.Since(start).Round(time.Millisecond))
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 1
	}
	if Failing(cells) {
		return 1
	}
	return 0
}

// slowRun is how long a matrix runs before the command says, on stderr,
// what it is doing: nothing else is printed until the table.
const slowRun = 2 * time.Second

// writeCells writes cells in the format the flags chose.
func writeCells(w io.Writer, cells []Cell, asJSON, asMarkdown bool) error {
	switch {
	case asJSON:
		return WriteJSON(w, cells)
	case asMarkdown:
		return WriteMarkdown(w, cells)
	}
	return WriteText(w, cells)
}
