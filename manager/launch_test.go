package manager_test

import (
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/plugkit/plugkit/handshake"
	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/manager"
)

// TestLaunchSettingsReachEveryStart checks that the manager launches its
// plugins, for Describe and for use, through Config.Runner, with only the
// host variables Config.InheritEnv names and with the multiplexed broker
// requested when Config.MultiplexBroker says so.
func TestLaunchSettingsReachEveryStart(t *testing.T) {
	t.Setenv("PLUGKIT_MANAGER_TEST_SECRET", "do-not-pass")
	var mu sync.Mutex
	var envs [][]string
	runner := host.RunnerFunc(func(l *host.Launch) error {
		mu.Lock()
		defer mu.Unlock()
		envs = append(envs, slices.Clone(l.Cmd.Env))
		return nil
	})
	dir := t.TempDir()
	writePlugin(t, dir, "both", "both 1,2 presign")
	m := newManager(t, manager.Config{
		Sources: []manager.Source{manager.Dirs(dir)},
		Launch:  host.Command{Runner: runner, InheritEnv: []string{"PATH"}, MultiplexBroker: true},
	})
	conn, info := store(t, m, "both")
	if info.Major != 2 {
		t.Fatalf("dispensed major %d, want 2", info.Major)
	}
	// The process in use starts on the first call.
	if got := config(t, initStore(t, conn, map[string]string{"bucket": "b"})); got != "map[bucket:b]" {
		t.Fatalf("config %q", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(envs) != 2 {
		t.Fatalf("the runner saw %d launches, want 2 (Describe at Discover, then the process in use)", len(envs))
	}
	for i, env := range envs {
		joined := strings.Join(env, "\n")
		if strings.Contains(joined, "PLUGKIT_MANAGER_TEST_SECRET") {
			t.Errorf("launch %d: the plugin inherited a variable InheritEnv does not name", i)
		}
		if !slices.Contains(env, handshake.EnvMultiplexGRPC+"=true") {
			t.Errorf("launch %d: %s=true missing from the plugin's environment", i, handshake.EnvMultiplexGRPC)
		}
		if !slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "PATH=") }) {
			t.Errorf("launch %d: PATH, which InheritEnv names, is missing", i)
		}
	}
}
