package wasmhost_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/wasmhost"
)

// The module bombs of issue 36, point 9, each run in a child process (this
// test binary again, TestBombChild) so that a bomb that goes off kills the
// child, not the tests: the child watches its own resident memory and
// exits when it passes bombRSSCap, and the parent gives it bombWait.

// bombEnv names the bomb a child runs.
const bombEnv = "PLUGKIT_WASMBOMB"

const (
	bombRSSCap = 1 << 30 // over its start, the child gives up
	bombWait   = 3 * time.Minute
	// memOverhead is the host memory a guest may take beyond 1.25x its
	// MemoryLimit: wazero's instance, stacks and the module's own
	// structures (measured: see the report in docs/wasm.md).
	memOverhead = 32 << 20
)

// runBomb runs the bomb name in a child and returns its last line of
// output, which says what happened ("refused ...", "ran ...").
func runBomb(t *testing.T, name string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bombWait)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestBombChild$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), bombEnv+"="+name)
	out, err := cmd.CombinedOutput()
	var last string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, "BOMB ") {
			last = strings.TrimPrefix(line, "BOMB ")
		}
	}
	if last == "" {
		t.Fatalf("%s: the child (the host) did not survive (%v, context %v):\n%s", name, err, ctx.Err(), tail(out))
	}
	t.Logf("%s: %s", name, last)
	return last
}

// wantBomb runs the bomb name and checks that its outcome starts with
// prefix (want says it in words).
func wantBomb(t *testing.T, name, prefix, want string) {
	t.Helper()
	if got := runBomb(t, name); !strings.HasPrefix(got, prefix) {
		t.Errorf("got %q, want %s", got, want)
	}
}

func tail(b []byte) []byte { return b[max(0, len(b)-2000):] }

// TestLocalsBombRefused: a 56-byte module declaring 4 billion locals is
// refused at compile with a *LimitError; the host lives (it had died of
// Go's fatal out-of-memory error).
func TestLocalsBombRefused(t *testing.T) {
	t.Parallel() // a child process of its own
	wantBomb(t, "locals", "refused Limits.Locals", "refused by Limits.Locals")
}

// TestTableGrowBombRefused: a module that grows a table of no maximum by
// 2^27 entries (1 GiB of host memory) under MemoryLimit 4 MiB is refused
// before it runs, counted against MemoryLimit.
func TestTableGrowBombRefused(t *testing.T) {
	t.Parallel() // a child process of its own
	wantBomb(t, "table", "refused MemoryLimit", "refused by MemoryLimit")
}

// TestManyFunctionsRefused: a module of a million functions (21 s of
// compile) is refused before it is compiled.
func TestManyFunctionsRefused(t *testing.T) {
	t.Parallel() // a child process of its own
	wantBomb(t, "functions", "refused Limits.Functions", "refused by Limits.Functions")
}

// TestNestedBlocksRefused: a function of 300,000 nested blocks (900 KB;
// minutes of compile, whatever the context said) is refused before it is
// compiled. (The 3 MB one is past Limits.FunctionSize too.)
func TestNestedBlocksRefused(t *testing.T) {
	t.Parallel() // a child process of its own
	wantBomb(t, "nested", "refused Limits.Blocks", "refused by Limits.Blocks")
}

// TestCompileHonoursContext: a module inside every limit whose compile
// takes long (functions of many blocks) stops at the context's deadline
// with its error, rather than when the compile ends.
func TestCompileHonoursContext(t *testing.T) {
	t.Parallel() // a child process of its own
	wantBomb(t, "slow", "stopped", "the compile stopped by its context")
}

// TestGuestMemoryHostCost: a guest that grows its memory to its limit
// (256 MiB), a page at a time as Go's allocator does, and writes every
// page costs the host at most 1.25x the limit plus memOverhead (wazero's
// copies had cost three times the limit).
func TestGuestMemoryHostCost(t *testing.T) {
	t.Parallel() // a child process of its own
	got := runBomb(t, "memory")
	var grew int64
	if _, err := fmt.Sscanf(got, "ran host %d", &grew); err != nil {
		t.Fatalf("got %q, want the guest run: %v", got, err)
	}
	const limit = 256 << 20
	if bound := int64(limit*5/4 + memOverhead); grew > bound {
		t.Errorf("the host grew by %d MiB for a guest of %d MiB; want at most %d MiB", grew>>20, limit>>20, bound>>20)
	}
}

// TestBombChild is the child of the tests above; without bombEnv it does
// nothing.
func TestBombChild(t *testing.T) {
	name := os.Getenv(bombEnv)
	if name == "" {
		return
	}
	base := rss(t, "VmRSS")
	go func() { // the watchdog: a bomb that goes off ends here
		for range time.Tick(5 * time.Millisecond) {
			if rss(t, "VmRSS") > base+bombRSSCap {
				fmt.Println("\nwatchdog: the host's memory grew past 1 GiB")
				os.Exit(3)
			}
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfg := wasmhost.Config{}
	var mod []byte
	switch name {
	case "locals":
		mod = localsBomb(4_000_000_000)
	case "table":
		cfg.MemoryLimit = 4 << 20
		mod = tableGrowBomb(1 << 27)
	case "functions":
		mod = manyFunctions(1_000_000)
	case "nested":
		mod = nestedBlocks(300_000) // 900 KB: within Limits.FunctionSize
	case "slow":
		mod = manyBlockFunctions(200, 2000)
		ctx, cancel = context.WithTimeout(ctx, time.Second)
		defer cancel()
	case "memory":
		cfg.MemoryLimit = 256 << 20
		mod = memoryGrowModule(256 << 20 / pageSize)
	}
	rt := wasmhost.New(cfg)
	defer rt.Close(context.Background())
	start := time.Now()
	if name == "memory" { // compiled first: the figure is the guest's
		if err := rt.Compile(ctx, mod); err != nil {
			t.Fatal(err)
		}
		base = rss(t, "VmRSS")
		g, err := rt.StartGuest(ctx, host.GuestSpec{Path: "memory.wasm", Module: mod, Stdout: os.Stdout, Stderr: os.Stderr})
		if err != nil {
			t.Fatal(err)
		}
		<-g.Done()
		fmt.Printf("BOMB ran host %d bytes (guest error %v)\n", rss(t, "VmHWM")-base, g.Err())
		return
	}
	err := rt.Compile(ctx, mod)
	var le *wasmhost.LimitError
	switch {
	case errors.As(err, &le):
		fmt.Printf("BOMB refused %s in %v: %v\n", le.Field, time.Since(start), err)
	case errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil && err != nil:
		fmt.Printf("BOMB stopped in %v: %v\n", time.Since(start), err)
	default:
		fmt.Printf("BOMB compiled in %v: %v\n", time.Since(start), err)
	}
}

// rss is the field of /proc/self/status named (VmRSS, VmHWM), in bytes.
func rss(t *testing.T, field string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no %s in /proc/self/status", field)
	return 0
}
