//go:build corpus

package protocheck

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/plugkit/plugkit/internal/testutil"
	"github.com/plugkit/plugkit/protocheck/load"
	"github.com/plugkit/plugkit/protocheck/ruleset"
)

// tfpluginPairs lays out every consecutive tfplugin pair as directories
// DIR/MAJ.MIN/tfpluginMAJ.proto and returns [old, new] directory pairs.
func tfpluginPairs(b *testing.B) [][2]string {
	b.Helper()
	src := filepath.Join(sharedDir(b), "corpus", "terraform")
	dir := testutil.TempDir(b)
	var pairs [][2]string
	for _, maj := range []int{5, 6} {
		for min := 0; min <= 9; min++ {
			data, err := os.ReadFile(filepath.Join(src, fmt.Sprintf("tfplugin%d.%d.proto", maj, min)))
			if err != nil {
				b.Fatal(err)
			}
			d := filepath.Join(dir, fmt.Sprintf("%d.%d", maj, min))
			writeTree(b, d, map[string]string{fmt.Sprintf("tfplugin%d.proto", maj): string(data)})
			if min > 0 {
				pairs = append(pairs, [2]string{filepath.Join(dir, fmt.Sprintf("%d.%d", maj, min-1)), d})
			}
		}
	}
	return pairs
}

// BenchmarkBreakingTfplugin loads both sides of all 18 tfplugin pairs from
// disk and checks the FILE rules, in process. One op = all 18 pairs.
func BenchmarkBreakingTfplugin(b *testing.B) {
	pairs := tfpluginPairs(b)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, p := range pairs {
			old, err := load.Load(ctx, p[0], load.LoadOptions{})
			if err != nil {
				b.Fatal(err)
			}
			cur, err := load.Load(ctx, p[1], load.LoadOptions{})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := Breaking(old, cur, Options{Use: []string{ruleset.CategoryFILE}}); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func runPairs(b *testing.B, pairs [][2]string, command func(p [2]string) *exec.Cmd) {
	b.Helper()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, p := range pairs {
			cmd := command(p)
			if out, err := cmd.CombinedOutput(); err != nil {
				if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 100 {
					b.Fatalf("%v: %v\n%s", cmd.Args, err, out)
				}
			}
		}
	}
}

// BenchmarkBreakingTfpluginPlugkitCLI runs the plugkit binary once per
// tfplugin pair, like BenchmarkBreakingTfpluginBuf runs buf: process start
// included. One op = all 18 pairs.
func BenchmarkBreakingTfpluginPlugkitCLI(b *testing.B) {
	pairs := tfpluginPairs(b)
	bin := filepath.Join(testutil.TempDir(b), "plugkit")
	build := exec.Command("go", "build", "-o", bin, "github.com/plugkit/plugkit/cmd/plugkit")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("building plugkit: %v\n%s", err, out)
	}
	runPairs(b, pairs, func(p [2]string) *exec.Cmd {
		return exec.Command(bin, "proto", "breaking", p[1], "--against", p[0], "--use", "FILE", "--error-format", "json")
	})
}

// BenchmarkBreakingTfpluginBuf runs "buf breaking" once per tfplugin pair
// (FILE, buf's default), when buf is on PATH. One op = all 18 pairs.
func BenchmarkBreakingTfpluginBuf(b *testing.B) {
	bufPath, err := exec.LookPath("buf")
	if err != nil {
		b.Skip("buf is not on PATH (go install github.com/bufbuild/buf/cmd/buf@v1.75.0)")
	}
	pairs := tfpluginPairs(b)
	runPairs(b, pairs, func(p [2]string) *exec.Cmd {
		cmd := exec.Command(bufPath, "breaking", filepath.Base(p[1]), "--against", filepath.Base(p[0]), "--error-format", "json")
		cmd.Dir = filepath.Dir(p[1])
		cmd.Env = append(os.Environ(), "BUF_CACHE_DIR="+filepath.Join(filepath.Dir(p[1]), ".bufcache"))
		return cmd
	})
}
