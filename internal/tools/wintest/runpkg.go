package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/plugkit/plugkit/internal/testutil"
)

// event is one line of test2json's output.
type event struct {
	Action string
	Test   string
	Output string
}

// result is what one package's run gave.
type result struct {
	pkg            string
	passed, failed int
	skips          []string // test: reason
	notOnWindows   []string // test: reason
	broken         string   // why the package itself failed, beyond its tests
	elapsed        time.Duration
}

// runPackage compiles p's tests for windows/amd64 and runs them under Wine.
func runPackage(cfg config, w *wine, p pkg, prebuilt string) (res result) {
	start := time.Now()
	res.pkg = p.ImportPath
	defer func() { res.elapsed = time.Since(start) }()
	bin := filepath.Join(cfg.work, "bin", strings.ReplaceAll(p.ImportPath, "/", "_")+".test.exe")
	build := command(context.Background(), "", []string{"GOOS=windows", "GOARCH=amd64", "CGO_ENABLED=0"}, "go", "test", "-c", "-o", bin, p.ImportPath)
	if err := runQuiet(build); err != nil {
		res.broken = "compiling its tests for windows: " + err.Error()
		return res
	}
	fmt.Printf("== %s\n", p.ImportPath)
	ctx, cancel := context.WithTimeout(context.Background(), cfg.timeout+30*time.Second)
	defer cancel()
	args := []string{bin, "-test.v=test2json", "-test.count=1", "-test.timeout=" + cfg.timeout.String()}
	if cfg.run != "" {
		args = append(args, "-test.run="+cfg.run)
	}
	env := append([]string{"PLUGKIT_PREBUILT=Z:" + prebuilt}, w.env...)
	tests := command(ctx, p.Dir, env, "wine", args...)
	conv := command(context.Background(), p.Dir, nil, "go", "tool", "test2json", "-p", p.ImportPath)
	pr, pw := io.Pipe()
	tests.Stdout, tests.Stderr = pw, pw
	conv.Stdin = pr
	convOut, err := conv.StdoutPipe()
	if err == nil {
		err = conv.Start()
	}
	if err == nil {
		err = tests.Start()
	}
	if err != nil {
		res.broken = err.Error()
		return res
	}
	exited := make(chan error, 1)
	go func() { exited <- tests.Wait(); pw.Close() }()
	ended := res.read(cfg, convOut)
	conv.Wait()
	waitErr := <-exited
	switch {
	case ctx.Err() != nil:
		res.broken = fmt.Sprintf("timed out after %v (wintest -timeout)", cfg.timeout)
		w.restart()
	default:
		res.checkEnd(ended, waitErr)
	}
	return res
}

// checkEnd marks the package broken when its binary ended without the
// package's own result (ended false), or failed (waitErr) with no test
// failed: a binary killed or crashed mid-run reports nothing for the
// tests it did not reach, which would otherwise count as nothing and the
// package as passed.
func (res *result) checkEnd(ended bool, waitErr error) {
	if res.broken == "" && res.failed == 0 && (!ended || waitErr != nil) {
		res.broken = fmt.Sprintf("the test binary ended without its result (%v) after %d tests passed", waitErr, res.passed)
	}
}

// read consumes test2json's events, counting results and printing the
// output of what failed; it reports whether the package's own result
// came.
func (res *result) read(cfg config, r io.Reader) (ended bool) {
	outputs := map[string]*strings.Builder{}
	pkgFailed := false
	dec := json.NewDecoder(r)
	for {
		var e event
		if err := dec.Decode(&e); err != nil {
			break
		}
		if outputs[e.Test] == nil {
			outputs[e.Test] = &strings.Builder{}
		}
		out := outputs[e.Test]
		switch e.Action {
		case "output":
			out.WriteString(e.Output)
			if cfg.verbose {
				fmt.Print(e.Output)
			}
		case "pass", "fail", "skip":
			if e.Test == "" {
				pkgFailed, ended = e.Action == "fail", true
				continue
			}
			res.record(e.Action, e.Test, out.String())
		}
	}
	if pkgFailed && res.failed == 0 {
		res.broken = "the test binary failed outside any test:\n" + tail(outputs[""].String(), 40)
	}
	return ended
}

// record counts one test's outcome.
func (res *result) record(action, test, output string) {
	switch action {
	case "pass":
		res.passed++
	case "fail":
		res.failed++
		fmt.Printf("--- FAIL: %s %s\n%s", res.pkg, test, tail(output, 60))
	case "skip":
		reason := skipReason(output)
		if r, ok := strings.CutPrefix(reason, testutil.NotOnWindowsPrefix); ok {
			res.notOnWindows = append(res.notOnWindows, test+": "+r)
		} else {
			res.skips = append(res.skips, test+": "+reason)
		}
	}
}

// skipReason finds the message a skipped test gave.
func skipReason(output string) string {
	lines := strings.Split(strings.TrimSpace(output), "\n")
	for _, l := range lines {
		if i := strings.Index(l, testutil.NotOnWindowsPrefix); i >= 0 {
			return l[i:]
		}
	}
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if l != "" && !strings.HasPrefix(l, "---") && !strings.HasPrefix(l, "===") {
			if _, msg, ok := strings.Cut(l, ": "); ok && strings.Contains(l[:len(l)-len(msg)], ".go:") {
				return msg
			}
			return l
		}
	}
	return "(no reason given)"
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.SplitAfter(s, "\n")
	if len(lines) > n {
		lines = append([]string{"...\n"}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "")
}
