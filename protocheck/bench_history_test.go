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
		old, err := Load(ctx, p[0], LoadOptions{Dir: historyDir})
		if err != nil {
			t.Fatal(err)
		}
		cur, err := Load(ctx, p[1], LoadOptions{Dir: historyDir})
		if err != nil {
			t.Fatal(err)
		}
		fs, err := Breaking(old, cur, Options{Use: []string{CategoryFILE}, BufCompat: true})
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
			old, err := Load(ctx, p[0], LoadOptions{Dir: historyDir})
			if err != nil {
				b.Fatal(err)
			}
			cur, err := Load(ctx, p[1], LoadOptions{Dir: historyDir})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := Breaking(old, cur, Options{Use: []string{CategoryFILE}, BufCompat: true, BufNames: true}); err != nil {
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

// buildPlugkit builds cmd/plugkit into a temporary directory.
func buildPlugkit(tb testing.TB) string {
	tb.Helper()
	bin := filepath.Join(tb.TempDir(), "plugkit")
	build := exec.Command("go", "build", "-o", bin, "github.com/plugkit/plugkit/cmd/plugkit")
	if out, err := build.CombinedOutput(); err != nil {
		tb.Fatalf("building plugkit: %v\n%s", err, out)
	}
	return bin
}

// BenchmarkHistoryCLI runs "plugkit proto breaking --buf-compat
// --buf-names" and "buf breaking" as one process per pair of the history,
// both on the same pairs, interleaved so that both see the same machine
// load. It first checks that both print the same JSON, byte for byte.
// Metrics: plugkit-ms/pair, buf-ms/pair and buf/plugkit, the speed-up.
// buf must be on PATH (make bench-proto installs it).
func BenchmarkHistoryCLI(b *testing.B) {
	bufPath, err := exec.LookPath("buf")
	if err != nil {
		b.Skip("buf is not on PATH (go install github.com/bufbuild/buf/cmd/buf@v1.75.0)")
	}
	pairs := historyPairs(b)
	bin := buildPlugkit(b)
	dir, err := filepath.Abs(historyDir)
	if err != nil {
		b.Fatal(err)
	}
	plugkit := func(p [2]string) []byte {
		return cliRun(b, dir, bin, "proto", "breaking", p[1], "--against", p[0], "--buf-compat", "--buf-names", "--use", "FILE", "--error-format", "json")
	}
	buf := func(p [2]string) []byte {
		return cliRun(b, dir, bufPath, "breaking", p[1], "--against", p[0], "--error-format", "json")
	}
	for _, p := range pairs {
		if got, want := plugkit(p), buf(p); !bytes.Equal(got, want) {
			b.Fatalf("%s -> %s: plugkit and buf differ\nplugkit:\n%s\nbuf:\n%s", p[0], p[1], got, want)
		}
	}
	var tPlugkit, tBuf time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, p := range pairs {
			t0 := time.Now()
			plugkit(p)
			t1 := time.Now()
			buf(p)
			tPlugkit += t1.Sub(t0)
			tBuf += time.Since(t1)
		}
	}
	n := float64(b.N * len(pairs))
	b.ReportMetric(float64(tPlugkit.Microseconds())/1000/n, "plugkit-ms/pair")
	b.ReportMetric(float64(tBuf.Microseconds())/1000/n, "buf-ms/pair")
	b.ReportMetric(float64(tBuf)/float64(tPlugkit), "buf/plugkit")
}
