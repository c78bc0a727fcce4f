package manager_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	catalogv1 "github.com/plugkit/plugkit/gen/plugkit/catalog/v1"
	"github.com/plugkit/plugkit/handshake"
	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/testutil"
	"github.com/plugkit/plugkit/manager"
	"google.golang.org/grpc"
)

// TestLaunchSettingsReachEveryStart checks that the manager launches its
// plugins, for Describe and for use, from the Config.Launch template:
// through its Runner, with only the host variables its InheritEnv names
// and with the multiplexed broker requested when its MultiplexBroker says
// so.
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
	dir := testutil.TempDir(t)
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

// TestHostTemplateReachesEveryConnection checks that Config.Host reaches
// the connection of every start, for Describe and for use: its dial
// options see both calls, while the manager sets the versions itself.
func TestHostTemplateReachesEveryConnection(t *testing.T) {
	var mu sync.Mutex
	var methods []string
	record := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoke grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		mu.Lock()
		methods = append(methods, method)
		mu.Unlock()
		return invoke(ctx, method, req, reply, cc, opts...)
	}
	dir := testutil.TempDir(t)
	writePlugin(t, dir, "both", "both 1,2")
	m := newManager(t, manager.Config{
		Sources: []manager.Source{manager.Dirs(dir)},
		// Versions the manager must replace with the catalog's own.
		Host: host.Options{Versions: []int{99}, DialOptions: []grpc.DialOption{grpc.WithChainUnaryInterceptor(record)}},
	})
	conn, _ := store(t, m, "both")
	initStore(t, conn, map[string]string{"bucket": "b"})
	mu.Lock()
	defer mu.Unlock()
	// Leave out plugkit's own health checks and shutdowns.
	methods = slices.DeleteFunc(methods, func(m string) bool {
		return strings.HasPrefix(m, "/grpc.health.v1.") || strings.HasPrefix(m, "/plugin.")
	})
	want := []string{catalogv1.Catalog_Describe_FullMethodName, "/objectstore.v2.ObjectStore/Init"}
	if !slices.Equal(methods, want) {
		t.Errorf("the template's interceptor saw %q, want %q", methods, want)
	}
}
