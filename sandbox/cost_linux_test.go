package sandbox_test

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/plugkit/plugkit/sandbox"
)

// BenchmarkSandboxCost measures, in one run, what starting and closing a
// sandboxed plugin costs against exec of the same binary: each iteration
// starts and closes the probe plugin once with the default runner (exec)
// and once in the sandbox, and the sub-benchmark reports both and their
// ratio. "root" runs as root; "rootless" runs in a copy of this binary as
// uid 65534 (user namespace and Landlock), whose figures it reports.
func BenchmarkSandboxCost(b *testing.B) {
	b.Run(rootMode, func(b *testing.B) {
		if rootless() {
			b.Fatal("the root mode needs a host running as root: run the benchmark as root")
		}
		benchCost(b)
	})
	b.Run(rootlessMode, func(b *testing.B) {
		if rootless() {
			benchCost(b)
			return
		}
		benchRootless(b)
	})
}

// benchCost alternates exec and sandboxed start-and-close.
func benchCost(b *testing.B) {
	if err := sandbox.Available(); err != nil {
		b.Fatal(err)
	}
	plain, boxed := config(b, sandbox.Runner{}), config(b, sandbox.Runner{})
	plain.Runner = nil
	var tExec, tBox time.Duration
	startClose := func(cfg launchConfig) time.Duration {
		t0 := time.Now()
		cfg.startClose(b)
		return time.Since(t0)
	}
	for b.Loop() {
		tExec += startClose(plain)
		tBox += startClose(boxed)
	}
	n := float64(b.N)
	b.ReportMetric(float64(tExec.Microseconds())/1000/n, "exec-ms/op")
	b.ReportMetric(float64(tBox.Microseconds())/1000/n, "sandbox-ms/op")
	b.ReportMetric(float64(tBox)/float64(tExec), "sandbox/exec")
}

// benchRootless runs the rootless sub-benchmark in a copy of this binary
// as rootlessUID and reports its metrics.
func benchRootless(b *testing.B) {
	exe, err := rootlessBinary()
	if err != nil {
		b.Fatal(err)
	}
	benchtime := "20x"
	if f := flagValue("test.benchtime"); f != "" {
		benchtime = f
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	{ // once, whatever b.N: the child runs the iterations
		cmd := exec.CommandContext(ctx, exe, "-test.run=^$", "-test.bench=^BenchmarkSandboxCost$/^rootless$", "-test.benchtime="+benchtime, "-test.count=1")
		cmd.Dir = "/"
		cmd.Env = append(os.Environ(), "HOME=/", "GORACE=atexit_sleep_ms=0")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: rootlessUID, Gid: rootlessUID}}
		out, err := cmd.CombinedOutput()
		if err != nil {
			b.Fatalf("the rootless benchmark as uid %d: %v\n%s", rootlessUID, err, out)
		}
		for _, l := range strings.Split(string(out), "\n") {
			if !strings.HasPrefix(l, "BenchmarkSandboxCost/rootless") {
				continue
			}
			f := strings.Fields(l)
			for i := 4; i+1 < len(f); i += 2 { // name, N, ns, "ns/op", then value-unit pairs
				if v, err := strconv.ParseFloat(f[i], 64); err == nil {
					b.ReportMetric(v, f[i+1])
				}
			}
		}
	}
}

// flagValue returns the value of the test flag name, if it was set.
func flagValue(name string) string {
	for _, a := range os.Args[1:] {
		if v, ok := strings.CutPrefix(a, "-"+name+"="); ok {
			return v
		}
	}
	return ""
}
