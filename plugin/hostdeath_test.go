package plugin_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plugkit/plugkit/handshake"
	"github.com/plugkit/plugkit/internal/testutil"
	"github.com/plugkit/plugkit/plugin"
)

// The steps of the handshake at which stepHost lets itself be killed.
const (
	stepStarted     = "started"      // the plugin's process exists; it may not have run a single instruction of its own
	stepBeforeServe = "before-serve" // the plugin runs its main, which has not called Serve yet
	stepHandshake   = "handshake"    // the host read the handshake line (and kills itself at once)
	stepConnected   = "connected"    // the host connected to the plugin's address
)

// stepHost starts the plugin the way a host that does nothing special
// would (no Pdeathsig, no Shutdown), and once at step
// (PLUGKIT_PLUGIN_TEST_STEP) prints "pid N" (the plugin's) and waits to
// be killed. At the first two steps the plugin's standard output is the
// host's own, which its killer keeps reading, so that the plugin's
// handshake line finds a reader; at the first step the host also names
// itself in plugin.EnvHostPID, as a plugkit host does.
func stepHost() {
	step := os.Getenv("PLUGKIT_PLUGIN_TEST_STEP")
	exe, _ := os.Executable()
	cmd := exec.Command(exe)
	role := "plugin"
	if step == stepBeforeServe {
		role = "slow-plugin"
	}
	cmd.Env = append(os.Environ(), "PLUGKIT_PLUGIN_TEST_ROLE="+role, cookie.Key+"="+cookie.Value, "PLUGIN_PROTOCOL_VERSIONS=1,2")
	if step == stepStarted {
		cmd.Env = append(cmd.Env, plugin.EnvHostPID+"="+strconv.Itoa(os.Getpid()))
	}
	var out *bufio.Reader
	if step == stepStarted || step == stepBeforeServe {
		cmd.Stdout = os.Stdout
	} else {
		pipe, _ := cmd.StdoutPipe()
		out = bufio.NewReader(pipe)
	}
	if err := cmd.Start(); err != nil {
		os.Exit(3)
	}
	if out != nil {
		line, err := out.ReadString('\n')
		if err != nil {
			os.Exit(4)
		}
		if step == stepConnected {
			l, err := handshake.Parse(line)
			if err != nil {
				os.Exit(5)
			}
			conn, err := net.Dial(l.Network, l.Address)
			if err != nil {
				os.Exit(6)
			}
			defer conn.Close()
		}
	}
	fmt.Printf("pid %d\n", cmd.Process.Pid)
	if step == stepHandshake {
		// The instant after the line: the plugin may not yet have done
		// anything after writing it.
		if self, err := os.FindProcess(os.Getpid()); err == nil {
			self.Kill()
		}
	}
	time.Sleep(time.Minute)
	os.Exit(0)
}

// slowPluginMain is a plugin whose main says it runs ("main" on its
// standard output), then takes its time before Serve.
func slowPluginMain() {
	fmt.Println("main")
	time.Sleep(300 * time.Millisecond)
	examplePluginMain()
}

// TestPluginExitsWhenItsHostDiesAtEveryStep kills a host with SIGKILL at
// each step of the handshake, 20 times each, several at once (which loads
// the machine), and checks that the plugin exits by itself every time.
// The watch of the host used to begin after the handshake: a host killed
// before then left its plugin running for good.
func TestPluginExitsWhenItsHostDiesAtEveryStep(t *testing.T) {
	testutil.NotOnWindows(t, "the host is killed with SIGKILL and the plugin seen re-parented, which Windows does not do")
	const runs, parallel = 20, 6
	steps := []string{stepStarted, stepBeforeServe, stepHandshake, stepConnected}
	type result struct {
		step string
		took time.Duration
		err  error
	}
	results := make(chan result, runs*len(steps))
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for range runs {
		for _, step := range steps {
			wg.Go(func() {
				sem <- struct{}{}
				defer func() { <-sem }()
				took, err := killHostAt(step)
				results <- result{step, took, err}
			})
		}
	}
	wg.Wait()
	close(results)
	worst := map[string]time.Duration{}
	for r := range results {
		if r.err != nil {
			t.Errorf("host killed at step %q: %v", r.step, r.err)
			continue
		}
		worst[r.step] = max(worst[r.step], r.took)
	}
	for _, step := range steps {
		t.Logf("step %-12s: the plugin exited at most %v after its host was killed (%d runs)", step, worst[step].Round(time.Millisecond), runs)
	}
}

// orphanDeadline is how long a plugin gets to exit after its host is
// killed: far above the second it needs, for a loaded machine.
const orphanDeadline = 10 * time.Second

// killHostAt runs stepHost to step, kills it, and waits for its plugin to
// exit; it returns how long that took.
func killHostAt(step string) (time.Duration, error) {
	exe, _ := os.Executable()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	hostCmd := exec.CommandContext(ctx, exe)
	hostCmd.Env = append(os.Environ(), "PLUGKIT_PLUGIN_TEST_ROLE=step-host", "PLUGKIT_PLUGIN_TEST_STEP="+step, "GORACE=atexit_sleep_ms=0")
	out, err := hostCmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	if err := hostCmd.Start(); err != nil {
		return 0, err
	}
	defer hostCmd.Wait()
	r := bufio.NewReader(out)
	pid, inMain := 0, step != stepBeforeServe
	for pid == 0 || !inMain {
		line, err := r.ReadString('\n')
		if err != nil {
			hostCmd.Process.Kill()
			return 0, fmt.Errorf("reading the plugin's pid from the host: %v", err)
		}
		if rest, ok := strings.CutPrefix(line, "pid "); ok {
			pid, _ = strconv.Atoi(strings.TrimSpace(rest))
		}
		inMain = inMain || line == "main\n"
	}
	hostCmd.Process.Kill()
	killed := time.Now()
	go func() { // the plugin's handshake line may still come, at the first steps
		for {
			if _, err := r.ReadString('\n'); err != nil {
				return
			}
		}
	}()
	for testutil.Running(pid) {
		if time.Since(killed) > orphanDeadline {
			testutil.Kill(pid)
			return 0, fmt.Errorf("plugin %d still running %v after its host was killed", pid, orphanDeadline)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return time.Since(killed), nil
}
