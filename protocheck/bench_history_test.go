package protocheck

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/plugkit/plugkit/internal/testutil"
	"github.com/plugkit/plugkit/protocheck/load"
	"github.com/plugkit/plugkit/protocheck/ruleset"
)

// historyDir holds plugkit's own multi-file protocol history: eight
// releases (v1.0 to v1.7) of a nine-file inventory API with additions,
// type changes, a rename, a message moved between files, a deleted RPC, a
// go_package change and a deleted file.
var historyDir = filepath.Join("testdata", "history")

// historyPairs returns the consecutive [old, new] release directories.
func historyPairs(tb testing.TB) [][2]string {
	tb.Helper()
	entries, err := os.ReadDir(historyDir)
	if err != nil {
		tb.Fatal(err)
	}
	var dirs []string
	for _, e := range entries {
		if e.IsDir() {
			dirs = append(dirs, e.Name())
		}
	}
	sort.Strings(dirs)
	if len(dirs) < 2 {
		tb.Fatalf("%s: want several releases, have %v", historyDir, dirs)
	}
	var pairs [][2]string
	for i := 1; i < len(dirs); i++ {
		pairs = append(pairs, [2]string{dirs[i-1], dirs[i]})
	}
	return pairs
}

// TestHistoryFindings pins what the FILE rules find across the history, so
// that the benchmark below times real work: every breaking release is
// caught and the additive ones are clean.
func TestHistoryFindings(t *testing.T) {
	ctx := context.Background()
	want := map[string][]string{
		"v1.0": nil, "v1.1": nil,
		"v1.2": {"FIELD_SAME_JSON_NAME", "FIELD_SAME_NAME", "FIELD_SAME_TYPE", "FIELD_SAME_TYPE"},
		"v1.3": {"MESSAGE_NO_DELETE"},
		"v1.4": {"RPC_NO_DELETE"},
		"v1.5": {"FILE_SAME_GO_PACKAGE"},
		"v1.6": {"FILE_NO_DELETE"},
	}
	for _, p := range historyPairs(t) {
		old, err := load.Load(ctx, p[0], load.LoadOptions{Dir: historyDir})
		if err != nil {
			t.Fatal(err)
		}
		cur, err := load.Load(ctx, p[1], load.LoadOptions{Dir: historyDir})
		if err != nil {
			t.Fatal(err)
		}
		fs, err := Breaking(old, cur, Options{Use: []string{ruleset.CategoryFILE}, BufCompat: true})
		if err != nil {
			t.Fatal(err)
		}
		var types []string
		for _, f := range fs {
			types = append(types, f.Type)
		}
		sort.Strings(types)
		if got, w := types, want[p[0]]; len(got) != len(w) || (len(w) > 0 && !equalStrings(got, w)) {
			t.Errorf("%s -> %s: %v, want %v", p[0], p[1], got, w)
		}
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// BenchmarkHistoryInProcess loads and checks every pair of the history in
// process (FILE rules). One op = all pairs.
func BenchmarkHistoryInProcess(b *testing.B) {
	pairs := historyPairs(b)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, p := range pairs {
			old, err := load.Load(ctx, p[0], load.LoadOptions{Dir: historyDir})
			if err != nil {
				b.Fatal(err)
			}
			cur, err := load.Load(ctx, p[1], load.LoadOptions{Dir: historyDir})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := Breaking(old, cur, Options{Use: []string{ruleset.CategoryFILE}, BufCompat: true, BufNames: true}); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// cliRun runs one "breaking" command in dir and returns its stdout; exit
// status 100 (findings) is success.
func cliRun(tb testing.TB, dir string, name string, args ...string) []byte {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "BUF_CACHE_DIR="+filepath.Join(os.TempDir(), "plugkit-bench-bufcache"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 100 {
			tb.Fatalf("%v: %v\n%s", cmd.Args, err, stderr.Bytes())
		}
	}
	return stdout.Bytes()
}

// buildCommand builds a command of this module into a temporary directory.
func buildCommand(tb testing.TB, pkg string) string {
	tb.Helper()
	bin := filepath.Join(testutil.TempDir(tb), filepath.Base(pkg))
	build := exec.Command("go", "build", "-o", bin, pkg)
	if out, err := build.CombinedOutput(); err != nil {
		tb.Fatalf("building %s: %v\n%s", pkg, err, out)
	}
	return bin
}

// BenchmarkHistoryCLI runs "plugkit proto breaking", the lean
// "plugkit-proto breaking" (both with --buf-compat --buf-names) and "buf
// breaking" as one process per pair of the history, on the same pairs,
// interleaved so that all see the same machine load. It first checks that
// all three print the same JSON, byte for byte. Metrics: milliseconds per
// pair for each, and buf/plugkit and buf/plugkit-proto, the speed-ups. buf
// must be on PATH (make bench-proto installs it).
func BenchmarkHistoryCLI(b *testing.B) {
	bufPath, err := exec.LookPath("buf")
	if err != nil {
		b.Skip("buf is not on PATH (go install github.com/bufbuild/buf/cmd/buf@v1.75.0)")
	}
	pairs := historyPairs(b)
	plugkitBin := buildCommand(b, "github.com/plugkit/plugkit/cmd/plugkit")
	leanBin := buildCommand(b, "github.com/plugkit/plugkit/cmd/plugkit-proto")
	dir, err := filepath.Abs(historyDir)
	if err != nil {
		b.Fatal(err)
	}
	flags := func(p [2]string) []string {
		return []string{"breaking", p[1], "--against", p[0], "--buf-compat", "--buf-names", "--use", "FILE", "--error-format", "json"}
	}
	tools := []struct {
		name string
		run  func(p [2]string) []byte
		took time.Duration
	}{
		{name: "plugkit", run: func(p [2]string) []byte { return cliRun(b, dir, plugkitBin, append([]string{"proto"}, flags(p)...)...) }},
		{name: "plugkit-proto", run: func(p [2]string) []byte { return cliRun(b, dir, leanBin, flags(p)...) }},
		{name: "buf", run: func(p [2]string) []byte {
			return cliRun(b, dir, bufPath, "breaking", p[1], "--against", p[0], "--error-format", "json")
		}},
	}
	for _, p := range pairs {
		want := tools[2].run(p)
		for _, tool := range tools[:2] {
			if got := tool.run(p); !bytes.Equal(got, want) {
				b.Fatalf("%s -> %s: %s and buf differ\n%s:\n%s\nbuf:\n%s", p[0], p[1], tool.name, tool.name, got, want)
			}
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, p := range pairs {
			for j := range tools {
				t0 := time.Now()
				tools[j].run(p)
				tools[j].took += time.Since(t0)
			}
		}
	}
	n := float64(b.N * len(pairs))
	for _, tool := range tools {
		b.ReportMetric(float64(tool.took.Microseconds())/1000/n, tool.name+"-ms/pair")
	}
	b.ReportMetric(float64(tools[2].took)/float64(tools[0].took), "buf/plugkit")
	b.ReportMetric(float64(tools[2].took)/float64(tools[1].took), "buf/plugkit-proto")
}
