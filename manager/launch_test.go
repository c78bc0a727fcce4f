package manager_test

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	catalogv1 "github.com/plugkit/plugkit/gen/plugkit/catalog/v1"
	"github.com/plugkit/plugkit/handshake"
	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/testutil"
	"github.com/plugkit/plugkit/manager"
)

// TestLaunchSettingsReachEveryStart checks that the manager launches its
// plugins, for Describe and for use, from the Finder.Launch template:
// through its Runner, with only the host variables its InheritEnv names
// and with the multiplexed broker requested when its MultiplexBroker says
// so.
func TestLaunchSettingsReachEveryStart(t *testing.T) {
	t.Setenv("PLUGKIT_MANAGER_TEST_SECRET", "do-not-pass")
	var mu sync.Mutex
	var envs [][]string
	runner := testutil.RunnerFunc[*host.Launch](func(l *host.Launch) error {
		mu.Lock()
		defer mu.Unlock()
		envs = append(envs, slices.Clone(l.Cmd.Env))
		return nil
	})
	dir := testutil.TempDir(t)
	writePlugin(t, dir, "both", "both 1,2 presign")
	finder := &manager.Finder{Launch: host.Command{Cookie: cookie, Runner: runner, InheritEnv: []string{"PATH"}, MultiplexBroker: true}}
	m := newManager(t, manager.Config{Sources: []manager.Source{finder.Dirs(dir)}})
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
	// The launch for Describe asks for the description alone; the one in
	// use does not.
	if describe := handshake.EnvDescribe + "=1"; !slices.Contains(envs[0], describe) || slices.Contains(envs[1], describe) {
		t.Errorf("%s in the environment of the launch for Describe: %v, of the one in use: %v; want only the first",
			describe, slices.Contains(envs[0], describe), slices.Contains(envs[1], describe))
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

// TestHostTemplateReachesEveryConnection checks that Finder.Host reaches
// the connection of every start, for Describe and for use: its dial
// options see both calls, while the manager sets the versions itself.
// Without Finder.KeepDescribed a catalog plugin is described without a
// connection (its describe line), so only the use is seen; with it, the
// process is described over gRPC and kept for its use.
func TestHostTemplateReachesEveryConnection(t *testing.T) {
	t.Parallel()
	for _, keep := range []bool{false, true} {
		t.Run(fmt.Sprintf("KeepDescribed=%v", keep), func(t *testing.T) {
			opts, calls := describeCalls()
			// Versions the manager must replace with the catalog's own.
			opts.Versions = []int{99}
			dir := testutil.TempDir(t)
			writePlugin(t, dir, "both", "both 1,2")
			finder := &manager.Finder{Launch: host.Command{Cookie: cookie}, Host: opts, KeepDescribed: keep}
			m := newManager(t, manager.Config{Sources: []manager.Source{finder.Dirs(dir)}, Logger: opts.Logger, Telemetry: opts.Telemetry})
			conn, _ := store(t, m, "both")
			initStore(t, conn, map[string]string{"bucket": "b"})
			want := []string{"/objectstore.v2.ObjectStore/Init"}
			if keep {
				want = append([]string{catalogv1.Catalog_Describe_FullMethodName}, want...)
			}
			if got := calls(); !slices.Equal(got, want) {
				t.Errorf("the template's interceptor saw %q, want %q", got, want)
			}
			if got := finder.Launches(); got != 2-btoi(keep) {
				t.Errorf("Launches() = %d, want %d", got, 2-btoi(keep))
			}
		})
	}
}

func btoi(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
