package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// procCase is one command the report times as a whole process, the way a
// user pays for it from a shell: from fork/exec to the reaped exit.
type procCase struct {
	name string
	// args are the command line; "{dir}/" in an argument is the directory
	// of the built binaries.
	args []string
	// exitCode is the status the command must exit with: 1 for a plugin
	// run without its cookie (it says what it is and exits), 2 for the
	// plugkit CLI given an unknown command.
	exitCode int
}

// procCases are the whole-process contenders: the floors of the two
// processes of `plugkit inspect` (each binary started and run until it
// exits, doing nothing) and the whole inspect against a go-plugin host
// doing the same.
var procCases = []procCase{
	{"floor/pkplugin", []string{"{dir}/pkplugin"}, 1},
	{"floor/plugkit", []string{"{dir}/plugkit", "no-such-command"}, 2},
	{"inspect/plugkit", []string{"{dir}/plugkit", "inspect", "{dir}/pkplugin", "--cookie", "PLUGKIT_BENCH_PLUGIN=echo"}, 0},
	{"inspect/goplugin", []string{"{dir}/gpinspect", "{dir}/gpplugin"}, 0},
}

// procPackages are what the whole-process cases run.
var procPackages = []string{"./cmd/plugkit", "./bench/testdata/pkplugin", "./bench/testdata/gpplugin", "./bench/testdata/gpinspect"}

// timeProcesses builds the binaries of procCases and runs them as whole
// processes: one warm-up each, then runs rounds in which every case runs
// once, in turn, so that drift in the machine's load falls on all alike.
// It returns one go-test-style line per case and round
// ("BenchmarkProcess/NAME 1 NS ns/op"), which parse reads like the
// benchmarks' own.
func timeProcesses(ctx context.Context, runs int) ([]byte, error) {
	dir, err := os.MkdirTemp("", "plugkit-report-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	build := exec.CommandContext(ctx, "go", append([]string{"build", "-o", dir + "/"}, procPackages...)...)
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building %s: %v\n%s", strings.Join(procPackages, " "), err, out)
	}
	var lines strings.Builder
	for round := 0; round <= runs; round++ { // round 0 is the warm-up
		for _, c := range procCases {
			d, err := runOnce(ctx, dir, c)
			if err != nil {
				return nil, err
			}
			if round > 0 {
				fmt.Fprintf(&lines, "BenchmarkProcess/%s\t1\t%d ns/op\n", c.name, d.Nanoseconds())
			}
		}
	}
	return []byte(lines.String()), nil
}

// runOnce runs c once, its output thrown away (to /dev/null), and checks its exit code.
func runOnce(ctx context.Context, dir string, c procCase) (time.Duration, error) {
	args := make([]string, len(c.args))
	for i, a := range c.args {
		args[i] = strings.ReplaceAll(a, "{dir}/", dir+string(filepath.Separator))
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	// Stdout and stderr nil: /dev/null, as cheap as output can be.
	started := time.Now()
	err := cmd.Run()
	d := time.Since(started)
	code := 0
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		return 0, fmt.Errorf("%s: %w", c.name, err)
	}
	if code != c.exitCode {
		return 0, fmt.Errorf("%s (%s) exited with %d, want %d", c.name, strings.Join(args, " "), code, c.exitCode)
	}
	return d, nil
}
