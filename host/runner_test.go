package host_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	objectstorev1 "github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v1"
	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/osdep"
	"github.com/plugkit/plugkit/internal/testutil"
)

// A runner's changes to the command take effect: here the plugin's mode
// comes only from the runner.
func TestRunnerShapesCommand(t *testing.T) {
	cfg := config(t, "kv")
	cfg.Env = []string{"GORACE=atexit_sleep_ms=0"} // no mode: the plugin would not serve
	var got host.Launch
	cfg.Runner = testutil.RunnerFunc[*host.Launch](func(l *host.Launch) error {
		got = *l
		l.Cmd.Env = append(l.Cmd.Env, modeEnv+"=kv")
		return nil
	})
	c := start(t, cfg)
	if !exists(t, c, "yes") {
		t.Error("Exists answered wrongly")
	}
	if got.Cmd == nil || got.Cmd.Path != cfg.Path {
		t.Fatalf("the runner saw command %v", got.Cmd)
	}
	if !osdep.UnixSockets { // loopback TCP: no socket directory
		if got.SocketDir != "" {
			t.Errorf("the runner saw socket directory %q on a system without unix sockets", got.SocketDir)
		}
		return
	}
	if !strings.HasPrefix(filepath.Base(got.SocketDir), "plugkit-host-") {
		t.Fatalf("the runner saw socket directory %q", got.SocketDir)
	}
	if !slices.Contains(got.Cmd.Env, "PLUGIN_UNIX_SOCKET_DIR="+got.SocketDir) {
		t.Errorf("the command's environment lacks its socket directory %s", got.SocketDir)
	}
	if !strings.HasPrefix(c.ReattachConfig().Addr.String, got.SocketDir+"/") {
		t.Errorf("the plugin listens at %s, outside its socket directory %s", c.ReattachConfig().Addr.String, got.SocketDir)
	}
}

// A runner whose plugin sees its socket directory under another path (a
// symbolic link standing in for a container's mount) translates the
// plugin's handshake and broker addresses for the host and the host's
// broker addresses for the plugin.
// swap translates unix socket paths under from to the same paths under to.
func swap(from, to string) func(network, address string) (string, string, error) {
	return func(network, address string) (string, string, error) {
		rest, ok := strings.CutPrefix(address, from+"/")
		if network != "unix" || !ok {
			return "", "", fmt.Errorf("%s %s is outside %s", network, address, from)
		}
		return network, to + "/" + rest, nil
	}
}

func TestRunnerTranslatesAddresses(t *testing.T) {
	testutil.NotOnWindows(t, "it translates unix socket paths; Windows plugins listen on TCP")
	view := filepath.Join(testutil.TempDir(t), "plugin-view")
	var mu sync.Mutex
	var toHost, toPlugin []string
	cfg := config(t, "callback")
	cfg.Runner = testutil.RunnerFunc[*host.Launch](func(l *host.Launch) error {
		if err := os.Symlink(l.SocketDir, view); err != nil {
			return err
		}
		l.Cmd.Env = append(l.Cmd.Env, "PLUGIN_UNIX_SOCKET_DIR="+view)
		in, out := swap(view, l.SocketDir), swap(l.SocketDir, view)
		l.PluginToHost = func(network, address string) (string, string, error) {
			mu.Lock()
			toHost = append(toHost, address)
			mu.Unlock()
			return in(network, address)
		}
		l.HostToPlugin = func(network, address string) (string, string, error) {
			mu.Lock()
			toPlugin = append(toPlugin, address)
			mu.Unlock()
			return out(network, address)
		}
		return nil
	})
	c := start(t, cfg)
	real, err := filepath.EvalSymlinks(view)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(c.ReattachConfig().Addr.String, real+"/") {
		t.Errorf("ReattachConfig().Addr.String = %s; want the host's path, under %s", c.ReattachConfig().Addr.String, real)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	store := objectstorev1.NewObjectStoreClient(c.Conn())

	// Host serves, plugin dials the translated address.
	id := c.Broker().NextID()
	err = c.Broker().Serve(ctx, id, func(s *grpc.Server) {
		h := health.NewServer()
		h.SetServingStatus("host", healthpb.HealthCheckResponse_NOT_SERVING)
		healthpb.RegisterHealthServer(s, h)
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = store.Init(ctx, &objectstorev1.InitRequest{Config: map[string]string{"dial": fmt.Sprint(id)}})
	if !strings.Contains(fmt.Sprint(err), "host says NOT_SERVING") {
		t.Errorf("plugin calling back into the host: %v", err)
	}
	// Plugin serves, host dials the translated address.
	id = c.Broker().NextID()
	if _, err := store.Init(ctx, &objectstorev1.InitRequest{Config: map[string]string{"serve": fmt.Sprint(id)}}); err != nil {
		t.Fatal(err)
	}
	conn, err := c.Broker().Dial(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: "plugin-callback"}); err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("host calling the plugin's brokered service: %v %v", resp, err)
	}

	mu.Lock()
	defer mu.Unlock()
	if len(toHost) != 2 || !strings.HasPrefix(toHost[0], view+"/") || !strings.HasPrefix(toHost[1], view+"/") {
		t.Errorf("PluginToHost saw %q; want the handshake and one broker address, in the plugin's view %s", toHost, view)
	}
	if len(toPlugin) != 1 || !strings.HasPrefix(toPlugin[0], real+"/") {
		t.Errorf("HostToPlugin saw %q; want one broker address, in the host's view %s", toPlugin, real)
	}
}

func TestRunnerErrors(t *testing.T) {
	refused := errors.New("no launches today")
	t.Run("prepare", func(t *testing.T) {
		pidfile := filepath.Join(testutil.TempDir(t), "pid")
		cfg := config(t, "grandchild") // would write pidfile if it ran
		cfg.Env = append(cfg.Env, "PLUGKIT_TEST_PIDFILE="+pidfile)
		cfg.Runner = testutil.RunnerFunc[*host.Launch](func(*host.Launch) error { return refused })
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, err := host.Start(ctx, cfg.Command, cfg.Options)
		if err == nil {
			c.Close()
			t.Fatal("Start succeeded although the runner refused")
		}
		if !errors.Is(err, refused) || !strings.Contains(err.Error(), "Command.Runner") {
			t.Errorf("error %q; want the runner's, naming Command.Runner", err)
		}
		if _, err := os.Stat(pidfile); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the plugin ran although the runner refused: %v", err)
		}
	})
	t.Run("translate", func(t *testing.T) {
		cfg := config(t, "kv")
		cfg.Runner = testutil.RunnerFunc[*host.Launch](func(l *host.Launch) error {
			l.PluginToHost = func(string, string) (string, string, error) { return "", "", refused }
			return nil
		})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, err := host.Start(ctx, cfg.Command, cfg.Options)
		if err == nil {
			c.Close()
			t.Fatal("Start succeeded although the address did not translate")
		}
		if !errors.Is(err, refused) || !strings.Contains(err.Error(), "Launch.PluginToHost") {
			t.Errorf("error %q; want the translation's, naming Launch.PluginToHost", err)
		}
	})
	t.Run("nil command", func(t *testing.T) {
		cfg := config(t, "kv")
		cfg.Runner = testutil.RunnerFunc[*host.Launch](func(l *host.Launch) error { l.Cmd = nil; return nil })
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if c, err := host.Start(ctx, cfg.Command, cfg.Options); err == nil || !strings.Contains(err.Error(), "Launch.Cmd nil") {
			if c != nil {
				c.Close()
			}
			t.Errorf("a runner that drops the command: %v", err)
		}
	})
}

// A brokered service whose address does not translate is dropped with a
// warning: the host's Dial of it fails by its deadline, and the handshake
// (which did translate) keeps working.
func TestRunnerUntranslatableBrokerAddress(t *testing.T) {
	var logs syncBuffer
	cfg := config(t, "callback")
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	var calls atomic.Int32
	cfg.Runner = testutil.RunnerFunc[*host.Launch](func(l *host.Launch) error {
		l.PluginToHost = func(network, address string) (string, string, error) {
			if calls.Add(1) > 1 { // the handshake passes, broker addresses do not
				return "", "", errors.New("not reachable from the host")
			}
			return network, address, nil
		}
		return nil
	})
	c := start(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	id := c.Broker().NextID()
	if _, err := objectstorev1.NewObjectStoreClient(c.Conn()).Init(ctx, &objectstorev1.InitRequest{Config: map[string]string{"serve": fmt.Sprint(id)}}); err != nil {
		t.Fatal(err)
	}
	short, cancelShort := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancelShort()
	if conn, err := c.Broker().Dial(short, id); err == nil {
		conn.Close()
		t.Fatal("Dial of a service whose address did not translate succeeded")
	}
	if !strings.Contains(logs.String(), "does not translate") || !strings.Contains(logs.String(), "not reachable from the host") {
		t.Errorf("no warning about the dropped service:\n%s", logs.String())
	}
	if _, err := objectstorev1.NewObjectStoreClient(c.Conn()).Init(ctx, &objectstorev1.InitRequest{}); err != nil {
		t.Errorf("the plugin's own connection after the dropped service: %v", err)
	}
}

// A runner's Exited hook sees the plugin's exit and names its cause: the
// host reports it as the Cause of the ExitError (InUse), and logs it.
func TestRunnerExitedNamesCause(t *testing.T) {
	var logs syncBuffer
	cfg := config(t, "kv")
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	cause := errors.New("the runner's limit killed it")
	states := make(chan *os.ProcessState, 2)
	cfg.Runner = testutil.RunnerFunc[*host.Launch](func(l *host.Launch) error {
		l.Exited = func(st *os.ProcessState) error {
			states <- st
			return cause
		}
		return nil
	})
	c := start(t, cfg)
	testutil.Kill(c.Pid())
	select {
	case <-c.Exited():
	case <-time.After(5 * time.Second):
		t.Fatal("Exited not closed after the process was killed")
	}
	err := c.Close()
	var ue *host.ExitError
	if !errors.As(err, &ue) || !ue.InUse || !errors.Is(err, cause) || ue.Cause != cause {
		t.Fatalf("Close after a crash = %v, want an ExitError (InUse) whose Cause is the runner's", err)
	}
	if !strings.Contains(err.Error(), "the runner's limit killed it") {
		t.Errorf("the error %q does not say the cause", err)
	}
	if st := <-states; st == nil || st.String() != killedState() {
		t.Errorf("Exited saw state %v, want %s", st, killedState())
	}
	if len(states) != 0 {
		t.Error("Exited called more than once")
	}
	if !strings.Contains(logs.String(), "cause=\"the runner's limit killed it\"") {
		t.Errorf("the WARN record lacks the cause:\n%s", logs.String())
	}
}

// A launch whose process never starts is released: Exited gets nil.
func TestRunnerExitedReleasesFailedStart(t *testing.T) {
	cfg := config(t, "kv")
	released := make(chan *os.ProcessState, 1)
	cfg.Runner = testutil.RunnerFunc[*host.Launch](func(l *host.Launch) error {
		l.Cmd.Path = filepath.Join(testutil.TempDir(t), "missing")
		l.Exited = func(st *os.ProcessState) error {
			released <- st
			return nil
		}
		return nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if c, err := host.Start(ctx, cfg.Command, cfg.Options); err == nil {
		c.Close()
		t.Fatal("a missing binary started")
	}
	select {
	case st := <-released:
		if st != nil {
			t.Errorf("Exited got %v for a process that never started, want nil", st)
		}
	default:
		t.Error("Exited not called for a launch that never started")
	}
}

// A runner's Stderr gets the plugin's standard error, all of it by the
// time Exited is called, so that Exited can judge the exit by it; the
// Command's own copy (Output.Stderr) gets it too.
func TestRunnerStderrBeforeExited(t *testing.T) {
	cfg := config(t, "exit")
	var runnerCopy, commandCopy syncBuffer
	cfg.Output.Stderr = &commandCopy
	seen := make(chan string, 1)
	cfg.Runner = testutil.RunnerFunc[*host.Launch](func(l *host.Launch) error {
		l.Stderr = &runnerCopy
		l.Exited = func(*os.ProcessState) error {
			seen <- runnerCopy.String()
			return nil
		}
		return nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if c, err := host.Start(ctx, cfg.Command, cfg.Options); err == nil {
		c.Close()
		t.Fatal("a plugin that exits at once started")
	}
	const said = "boom: the config file /etc/x is missing"
	select {
	case got := <-seen:
		if !strings.Contains(got, said) {
			t.Errorf("Exited saw the runner's copy of stderr %q; want it to hold %q", got, said)
		}
	case <-ctx.Done():
		t.Fatal("Exited not called")
	}
	if !strings.Contains(commandCopy.String(), said) {
		t.Errorf("Command.Output.Stderr got %q; want it to hold %q", commandCopy.String(), said)
	}
}
