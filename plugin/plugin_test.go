package plugin_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/plugkit/plugkit/broker"
	"github.com/plugkit/plugkit/handshake"
	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/osdep"
	"github.com/plugkit/plugkit/internal/testutil"
	"github.com/plugkit/plugkit/plugin"
	"github.com/plugkit/plugkit/wire"
)

var cookie = handshake.Cookie{Key: "PLUGKIT_PLUGIN_TEST", Value: "yes"}

func TestMain(m *testing.M) {
	switch os.Getenv("PLUGKIT_PLUGIN_TEST_ROLE") {
	case "plugin":
		examplePluginMain()
		return
	case "bare-host":
		bareHost()
		return
	case "step-host":
		stepHost()
		return
	case "slow-plugin":
		slowPluginMain()
		return
	case "debug-host":
		debugHost()
		return
	case "load-clients":
		loadClients()
		return
	case "service":
		serviceMain()
		return
	}
	goleak.VerifyTestMain(testutil.Tidy(m), goleak.IgnoreTopFunction("github.com/plugkit/plugkit/host.spawner")) // the thread every plugin is forked from
}

// bareHost starts the plugin the way a host that does nothing special
// would (no Pdeathsig, no Shutdown), prints the plugin's pid and waits to
// be killed.
func bareHost() {
	exe, _ := os.Executable()
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), "PLUGKIT_PLUGIN_TEST_ROLE=plugin", cookie.Key+"="+cookie.Value, "PLUGIN_PROTOCOL_VERSIONS=1,2")
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		os.Exit(3)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	fmt.Printf("%d %s", cmd.Process.Pid, line)
	time.Sleep(time.Minute)
	os.Exit(0)
}

// TestPluginExitsWhenItsHostDies kills a host with SIGKILL, which gives it
// no chance to stop its plugin, and checks that the plugin exits by itself
// within a second.
func TestPluginExitsWhenItsHostDies(t *testing.T) {
	exe, _ := os.Executable()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	hostCmd := exec.CommandContext(ctx, exe)
	hostCmd.Env = append(os.Environ(), "PLUGKIT_PLUGIN_TEST_ROLE=bare-host", "GORACE=atexit_sleep_ms=0")
	out, err := hostCmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := hostCmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the plugin pid from the bare host: %v", err)
	}
	fields := strings.Fields(line)
	pid, err := strconv.Atoi(fields[0])
	if err != nil || len(fields) < 2 || !strings.HasPrefix(fields[1], "1|2|"+defaultNetwork()+"|") {
		t.Fatalf("bare host printed %q", line)
	}
	if !testutil.Running(pid) {
		t.Fatal("plugin not running before its host was killed")
	}
	hostCmd.Process.Kill()
	hostCmd.Wait()
	killed := time.Now()
	for testutil.Running(pid) {
		if time.Since(killed) > time.Second {
			testutil.Kill(pid)
			t.Fatalf("plugin %d still running 1 s after its host died", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("plugin exited %v after its host was killed", time.Since(killed).Round(time.Millisecond))
}

// TestRunInProcess runs a plugin inside the test, reattaches to it and
// stops it through the host's Close (the Shutdown RPC).
func TestRunInProcess(t *testing.T) {
	pr, pw := io.Pipe()
	env := map[string]string{cookie.Key: cookie.Value, handshake.EnvProtocolVersions: "1,2,3"}
	done := make(chan error, 1)
	go func() {
		// In the test's own process: no host to watch (under Wine its parent
		// is not a process it can open, which counts as gone).
		done <- plugin.RunIn(context.Background(), plugin.Config{
			Cookie:   cookie,
			Versions: map[int]plugin.Register{1: registerHealthOnly, 2: registerHealthOnly},
		}, plugin.Harness{LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }, Handshake: pw, KeepStdio: true, NoParentWatch: true})
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, pr)
	l, err := handshake.Parse(line)
	if err != nil {
		t.Fatal(err)
	}
	if l.AppVersion != 2 || l.ServerCert != nil {
		t.Fatalf("handshake %+v: want version 2 without TLS", l)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := host.Reattach(ctx, handshake.Reattach{Protocol: "grpc", ProtocolVersion: 2, Addr: handshake.ReattachAddr{Network: l.Network, String: l.Address}}, host.Options{Versions: []int{2}}, host.ReattachOptions{TrustTCPListener: trustTCP})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := healthpb.NewHealthClient(c.Conn()).Check(ctx, &healthpb.HealthCheckRequest{Service: wire.HealthService})
	if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health: %v %v", resp, err)
	}
	c.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run returned %v after Shutdown", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after the Shutdown RPC")
	}
	pw.Close()
	if _, err := os.Stat(l.Address); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket %s left behind: %v", l.Address, err)
	}
}

func TestRunRejects(t *testing.T) {
	noEnv := func(string) (string, bool) { return "", false }
	err := plugin.RunIn(context.Background(), plugin.Config{Cookie: cookie, Versions: map[int]plugin.Register{1: registerHealthOnly}}, plugin.Harness{LookupEnv: noEnv})
	var ce *handshake.CookieError
	if !errors.As(err, &ce) {
		t.Errorf("Run without the cookie: %v", err)
	}
	if err := plugin.Run(context.Background(), plugin.Config{Cookie: cookie}); err == nil || !strings.Contains(err.Error(), "Versions is empty") {
		t.Errorf("Run without versions: %v", err)
	}
	env := map[string]string{cookie.Key: cookie.Value, handshake.EnvClientCert: "not a certificate"}
	err = plugin.RunIn(context.Background(), plugin.Config{Cookie: cookie, Versions: map[int]plugin.Register{1: registerHealthOnly}}, plugin.Harness{LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
	if err == nil || !strings.Contains(err.Error(), handshake.EnvClientCert) {
		t.Errorf("Run with a broken client certificate: %v", err)
	}
}

func registerHealthOnly(*grpc.Server, *broker.Broker) error { return nil }

// TestConfigIsSmall: plugin.Config holds what a plugin author sets, at
// most 12 fields (issue 20); the in-process harness is not among them.
func TestConfigIsSmall(t *testing.T) {
	typ := reflect.TypeFor[plugin.Config]()
	if typ.NumField() > 12 {
		t.Errorf("plugin.Config has %d fields; want at most 12: group related settings in a field of their own type", typ.NumField())
	}
	for _, name := range []string{"LookupEnv", "Handshake", "KeepStdio", "NoParentWatch"} {
		if _, ok := typ.FieldByName(name); ok {
			t.Errorf("plugin.Config.%s is for in-process tests only: keep it in plugin.Harness, which RunIn takes", name)
		}
	}
}

// defaultNetwork is the network plugins listen on unless told otherwise:
// unix sockets, but loopback TCP on Windows.
func defaultNetwork() string {
	if osdep.UnixSockets {
		return "unix"
	}
	return "tcp"
}
