package faults_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/plugkit/plugkit/host"

	"github.com/plugkit/plugkit/internal/testutil"
)

// modeEnv, when set, makes the test binary one of the programs in
// children_test.go instead of running tests.
const modeEnv = "PLUGKIT_FAULTS_MODE"

// tagEnv marks every process a test starts, so that survivors can be
// found by scanning /proc: "RUN/TEST".
const tagEnv = "PLUGKIT_FAULTS_TAG"

// run is this test process's part of every tag.
var run = strconv.Itoa(os.Getpid())

func TestMain(m *testing.M) {
	if mode := os.Getenv(modeEnv); mode != "" {
		runChild(mode)
		os.Exit(0)
	}
	code := testutil.Main(m)
	if code == 0 {
		if err := goleak.Find(goleak.IgnoreTopFunction("github.com/plugkit/plugkit/host.spawner")); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
		if s := survivors(run + "/"); len(s) > 0 {
			fmt.Fprintln(os.Stderr, "processes started by the tests are still running:", s)
			code = 1
		}
	}
	os.Exit(code)
}

// tag is the value of tagEnv for the processes of test t.
func tag(t *testing.T) string { return run + "/" + t.Name() }

// survivors lists the live processes (not zombies) whose environment
// carries a tag starting with prefix.
func survivors(prefix string) []string {
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue
		}
		for _, kv := range bytes.Split(env, []byte{0}) {
			if v, ok := bytes.CutPrefix(kv, []byte(tagEnv+"=")); ok && bytes.HasPrefix(v, []byte(prefix)) && testutil.Running(pid) {
				out = append(out, fmt.Sprintf("%d (%s)", pid, v))
			}
		}
	}
	return out
}

// waitFor polls cond every 10 ms until it holds or d has passed.
func waitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// nothingRunning fails t if a process it started is still alive 2 s
// after the case ended; it kills the survivors so later cases are clean.
func nothingRunning(t *testing.T) {
	t.Helper()
	var left []string
	if !waitFor(2*time.Second, func() bool { left = survivors(tag(t)); return len(left) == 0 }) {
		t.Errorf("processes left running: %v", left)
		for _, s := range left {
			var pid int
			fmt.Sscan(s, &pid)
			if p, err := os.FindProcess(pid); err == nil {
				p.Kill()
			}
		}
	}
}

// socketDir makes a short private directory for the case's sockets (a
// t.TempDir path may be too long for a unix socket).
func socketDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "pkf-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// entries lists what is inside dir, one level down too: "a", "a/b".
func entries(dir string) []string {
	var out []string
	top, _ := os.ReadDir(dir)
	for _, e := range top {
		out = append(out, e.Name())
		if e.IsDir() {
			sub, _ := os.ReadDir(filepath.Join(dir, e.Name()))
			for _, s := range sub {
				out = append(out, e.Name()+"/"+s.Name())
			}
		}
	}
	return out
}

// emptyDir fails t if dir holds anything.
func emptyDir(t *testing.T, dir string) {
	t.Helper()
	if left := entries(dir); len(left) > 0 {
		t.Errorf("left in the socket directory: %v", left)
	}
}

// config starts this test binary as the plugin of mode, with its sockets
// in dir and its logs in logs.
func config(t *testing.T, mode, dir string, logs *syncBuffer) launchConfig {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return launchConfig{
		Command: host.Command{
			Path: exe,
			// GORACE: a race-enabled binary otherwise sleeps 1 s at exit.
			Env:      []string{modeEnv + "=" + mode, "GORACE=atexit_sleep_ms=0", tagEnv + "=" + tag(t)},
			Cookie:   cookie,
			Listen:   host.Listen{UnixSocketDir: dir},
			Timeouts: host.Timeouts{Start: 10 * time.Second},
		},
		Options: host.Options{
			Versions: []int{1},
			Name:     "faulty-" + mode,
			Logger:   slog.New(slog.NewJSONHandler(logs, nil)),
		},
	}
}

// launchConfig is what a test gives host.Start, each field reachable as
// cfg.Field.
type launchConfig struct {
	host.Command
	host.Options
}

func start(t *testing.T, cfg launchConfig) *host.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := host.Start(ctx, cfg.Command, cfg.Options)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// baseline is a process's resource use at one moment.
type baseline struct {
	goroutines int
	fds        int
	heap       uint64
}

func measure() baseline {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return baseline{goroutines: runtime.NumGoroutine(), fds: fdCount(os.Getpid()), heap: ms.HeapAlloc}
}

func fdCount(pid int) int {
	e, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return -1
	}
	return len(e)
}

// containsAll reports the wanted strings s lacks.
func lacks(s string, want ...string) []string {
	var out []string
	for _, w := range want {
		if !strings.Contains(s, w) {
			out = append(out, w)
		}
	}
	return out
}

// syncBuffer is a goroutine-safe log destination.
type syncBuffer = testutil.Buffer
