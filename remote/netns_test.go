//go:build linux

package remote_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/plugkit/plugkit/examples/objectstore"
	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/netnstest"
	"github.com/plugkit/plugkit/internal/remotetest"
	"github.com/plugkit/plugkit/internal/testutil"
	"github.com/plugkit/plugkit/manager"
)

const pluginIP = netnstest.PluginIP

// netns is the test's pair of namespaces.
type netns struct{ *netnstest.Pair }

func newNetns(t *testing.T) *netns { return &netns{netnstest.New(t, "pk")} }

func (n *netns) dialer(*testing.T) grpc.DialOption { return n.Dialer() }

// replica is a plugin service process in the plugins' namespace.
type replica struct {
	cmd    *exec.Cmd
	addr   string
	exited chan struct{}
	mu     sync.Mutex
	log    []string
}

func (n *netns) startReplica(t *testing.T, bin, addr string, env []string) *replica {
	t.Helper()
	cmd := n.Command(bin) // ip execs the plugin: cmd's pid is the plugin's
	cmd.Env = append(os.Environ(), env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := &replica{cmd: cmd, addr: addr, exited: make(chan struct{})}
	listening := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		once := sync.Once{}
		for sc.Scan() {
			r.mu.Lock()
			r.log = append(r.log, sc.Text())
			r.mu.Unlock()
			if strings.Contains(sc.Text(), "plugin service listening") {
				once.Do(func() { close(listening) })
			}
		}
		io.Copy(io.Discard, stderr)
	}()
	go func() {
		cmd.Wait()
		close(r.exited)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-r.exited
	})
	select {
	case <-listening:
	case <-r.exited:
		t.Fatalf("replica %s exited at start (%v): %s", addr, cmd.ProcessState, r.stderr())
	case <-time.After(30 * time.Second):
		t.Fatalf("replica %s did not start listening within 30 s: %s", addr, r.stderr())
	}
	return r
}

func (r *replica) stderr() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.log, "\n")
}

func (r *replica) kill(t *testing.T) {
	t.Helper()
	if err := r.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-r.exited:
	case <-time.After(10 * time.Second):
		t.Fatalf("replica %s outlived SIGKILL", r.addr)
	}
}

// buildPlugins builds the fs and memory plugins into a directory of the
// test's own, as the other packages' tests build them (testutil.GoBuild,
// same build configuration: one compile of their dependencies, one link
// in the Go build cache, for every package's tests).
func buildPlugins(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	for _, name := range []string{"fs", "memory"} {
		testutil.GoBuild(ctx, t, filepath.Join(dir, name), "../examples/objectstore/plugins/"+name)
	}
	return dir
}

func TestRemoteAcrossNetworkNamespaces(t *testing.T) {
	x := startAcrossNamespaces(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	x.ctx = ctx

	t.Run("refusals", x.refusals)

	m := x.discover(t)
	defer m.Close()
	store, err := objectstore.Open(ctx, m, "example.com/fs")
	if err != nil {
		t.Fatal(err)
	}
	if info := store.Info(); info.Major != 2 || info.Adapted || !info.Has(objectstore.CapPresign) {
		t.Fatalf("fs Info = %+v; want v2.1 directly", info)
	}
	x.store = store
	for i := range 100 {
		x.write(i)
	}
	if len(x.failures) > 0 {
		t.Fatalf("writes failed with both replicas up: %v", x.failures)
	}

	t.Run("failover on SIGKILL", x.failover)
	t.Run("reconnect when the replica comes back", func(t *testing.T) { x.reconnect(t, x.outer) })
	t.Run("every acknowledged write is readable", x.readBack)
	t.Run("adapter: a v1-only plugin served to a v2 host", func(t *testing.T) { x.adapter(t, m) })
	t.Run("SIGTERM drains and exits", x.drain)
}

// acrossNamespaces is TestRemoteAcrossNetworkNamespaces's world: two fs
// replicas (ep1, ep2) and a memory one (ep3) in the plugins' namespace,
// the host in the other, and the writes the host has made.
type acrossNamespaces struct {
	outer         *testing.T // the test, for replicas that outlive a subtest
	n             *netns
	bins, data    string
	pki           *remotetest.PKI
	ep1, ep2, ep3 string
	r1, r2, mem   *replica
	ctx           context.Context
	store         objectstore.Store

	acked    map[string]string // key to value, of each write acknowledged
	failures []error           // each write that failed
}

// startAcrossNamespaces builds the plugins and starts the three replicas,
// with TLS, in the plugins' namespace.
func startAcrossNamespaces(t *testing.T) *acrossNamespaces {
	n := newNetns(t)
	bins := buildPlugins(t)
	dir := t.TempDir()
	pki, err := remotetest.NewPKI(dir, pluginIP)
	if err != nil {
		t.Fatal(err)
	}
	x := &acrossNamespaces{
		outer: t, n: n, bins: bins, pki: pki,
		data: filepath.Join(dir, "objects"), // the replicas' shared directory
		ep1:  pluginIP + ":7001", ep2: pluginIP + ":7002", ep3: pluginIP + ":7003",
		acked: map[string]string{},
	}
	x.r1 = n.startReplica(t, filepath.Join(bins, "fs"), x.ep1, x.fsEnv(x.ep1))
	x.r2 = n.startReplica(t, filepath.Join(bins, "fs"), x.ep2, x.fsEnv(x.ep2))
	x.mem = n.startReplica(t, filepath.Join(bins, "memory"), x.ep3, pki.Environ(x.ep3))
	return x
}

// fsEnv is the environment of an fs replica listening on addr.
func (x *acrossNamespaces) fsEnv(addr string) []string {
	return append(x.pki.Environ(addr), "OBJECTSTORE_FS_DIR="+x.data, "PLUGKIT_DRAIN_TIMEOUT=5s")
}

// refusals: a host without a client certificate, or with one of another
// CA, is not served; the right certificate is, from the host's namespace.
func (x *acrossNamespaces) refusals(t *testing.T) {
	for name, tlsConfig := range map[string]*tls.Config{
		"no client certificate":       x.pki.NoCertTLS(),
		"a certificate of another CA": x.pki.ForeignTLS(),
	} {
		opts := host.Options{Security: host.TLS(tlsConfig), Versions: []int{1}, DialOptions: []grpc.DialOption{x.n.dialer(t)}}
		dctx, dcancel := context.WithTimeout(x.ctx, 3*time.Second)
		c, err := host.Dial(dctx, host.Remote{Endpoints: []string{x.ep1}}, opts)
		dcancel()
		if err == nil {
			c.Close()
			t.Fatalf("a host with %s was served", name)
		}
		t.Logf("%s: %v", name, err)
	}
	// The right certificate is served, from the host's namespace only.
	c, err := host.Dial(x.ctx, host.Remote{Endpoints: []string{x.ep1, x.ep2}},
		host.Options{Security: host.TLS(x.pki.HostTLS()), Versions: []int{1}, DialOptions: []grpc.DialOption{x.n.dialer(t)}})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
}

// discover starts a manager whose sources are the remote fs (ep1, ep2)
// and memory (ep3) services, and discovers them without error.
func (x *acrossNamespaces) discover(t *testing.T) *manager.Manager {
	t.Helper()
	remote := func(name string, eps ...string) manager.Remote {
		return manager.Remote{Kind: objectstore.Kind, Name: name, Remote: host.Remote{Endpoints: eps}, TLS: x.pki.HostTLS(), DialOptions: []grpc.DialOption{x.n.dialer(t)}}
	}
	finder := &manager.Finder{Launch: host.Command{Cookie: objectstore.Cookie}}
	m := manager.New(manager.Config{
		Sources: []manager.Source{finder.Remotes(
			remote("example.com/fs", x.ep1, x.ep2),
			remote("example.com/memory", x.ep3),
		)},
	})
	if err := m.Discover(x.ctx); err != nil {
		m.Close()
		t.Fatal(err)
	}
	for _, b := range m.Entries() {
		if b.Err != nil {
			m.Close()
			t.Fatalf("%s: %v", b.Location, b.Err)
		}
	}
	return m
}

// write puts object i to the fs store, recording it as acknowledged or
// its error as a failure.
func (x *acrossNamespaces) write(i int) {
	key, val := fmt.Sprintf("obj-%04d", i), fmt.Sprintf("value %d written across the veth", i)
	wctx, wcancel := context.WithTimeout(x.ctx, 10*time.Second)
	defer wcancel()
	if err := x.store.Put(wctx, key, []byte(val)); err != nil {
		x.failures = append(x.failures, err)
		return
	}
	x.acked[key] = val
}

// failover: writes go on in a goroutine while replica 1 is killed; at most
// the calls in flight on it fail, each naming its endpoint.
func (x *acrossNamespaces) failover(t *testing.T) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 100; i < 300; i++ {
			x.write(i)
		}
	}()
	time.Sleep(50 * time.Millisecond)
	x.r1.kill(t)
	<-done
	t.Logf("%d writes acknowledged, %d failed (in flight on the killed replica)", len(x.acked), len(x.failures))
	// At most the calls in flight on the killed replica fail, each
	// with an error naming its endpoint; the rest fail over.
	if len(x.failures) > 5 {
		t.Fatalf("%d writes failed after the kill: %v; want only those in flight", len(x.failures), x.failures)
	}
	for _, err := range x.failures {
		var ee *host.EndpointError
		if !errors.As(err, &ee) || status.Code(ee) != codes.Unavailable || ee.Endpoint != x.ep1 {
			t.Errorf("a failed write: %v (%T); want a *host.EndpointError naming %s", err, err, x.ep1)
		}
	}
	for i := 300; i < 350; i++ {
		x.write(i)
	}
	if len(x.failures) > 5 {
		t.Fatalf("writes still fail after the failover: %v", x.failures[len(x.failures)-1])
	}
}

// reconnect restarts replica 1 (owned by outer, so that it outlives the
// subtest) and kills replica 2: only a reconnection to replica 1 can serve
// the host, so 20 writes in a row must succeed within 20 s.
func (x *acrossNamespaces) reconnect(t, outer *testing.T) {
	x.r1 = x.n.startReplica(outer, filepath.Join(x.bins, "fs"), x.ep1, x.fsEnv(x.ep1))
	x.r2.kill(t)
	deadline := time.Now().Add(20 * time.Second)
	inARow := 0
	for i := 1000; inARow < 20; i++ {
		before := len(x.failures)
		x.write(i)
		if len(x.failures) == before {
			inARow++
			continue
		}
		inARow = 0
		if time.Now().After(deadline) {
			t.Fatalf("the host did not reconnect to the restarted replica within 20 s: %v", x.failures[len(x.failures)-1])
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// readBack: every acknowledged write is readable after the kills.
func (x *acrossNamespaces) readBack(t *testing.T) {
	for key, want := range x.acked {
		got, err := x.store.Get(x.ctx, key)
		if err != nil || string(got) != want {
			t.Fatalf("Get(%s) = %q, %v; want %q, acknowledged before the kills", key, got, err, want)
		}
	}
	t.Logf("%d acknowledged writes read back", len(x.acked))
}

// adapter: the v1-only memory plugin is served to the v2 host through the
// adapter, remotely, and its calls work.
func (x *acrossNamespaces) adapter(t *testing.T, m *manager.Manager) {
	ms, err := objectstore.Open(x.ctx, m, "example.com/memory")
	if err != nil {
		t.Fatal(err)
	}
	if info := ms.Info(); info.Major != 1 || !info.Adapted || info.Origin != manager.OriginRemote || info.Path != x.ep3 {
		t.Fatalf("memory Info = %+v; want major 1 adapted, remote", info)
	}
	if err := ms.Put(x.ctx, "a", []byte("adapted across the network")); err != nil {
		t.Fatal(err)
	}
	if st, err := ms.Stat(x.ctx, "a"); err != nil || st.Size != int64(len("adapted across the network")) {
		t.Fatalf("Stat through the adapter = %+v, %v", st, err)
	}
	if err := ms.Copy(x.ctx, "a", "b"); err != nil {
		t.Fatal(err)
	}
	if got, err := ms.Get(x.ctx, "b"); err != nil || string(got) != "adapted across the network" {
		t.Fatalf("Get(b) = %q, %v", got, err)
	}
}

// drain: SIGTERM makes replica 1 and the memory replica drain and exit 0.
func (x *acrossNamespaces) drain(t *testing.T) {
	for _, r := range []*replica{x.r1, x.mem} {
		r.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-r.exited:
			if !r.cmd.ProcessState.Success() {
				t.Fatalf("replica %s after SIGTERM: %v\n%s", r.addr, r.cmd.ProcessState, r.stderr())
			}
			if !strings.Contains(r.stderr(), "plugin service draining") {
				t.Fatalf("replica %s did not drain: %s", r.addr, r.stderr())
			}
		case <-time.After(15 * time.Second):
			t.Fatalf("replica %s did not exit within 15 s of SIGTERM", r.addr)
		}
	}
}
