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
	"runtime"
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

func buildPlugins(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	gobin, err := exec.LookPath("go")
	if err != nil {
		gobin = filepath.Join(runtime.GOROOT(), "bin", "go") // go test was run by path
	}
	cmd := exec.Command(gobin, "build", "-o", dir+"/", "../examples/objectstore/plugins/fs", "../examples/objectstore/plugins/memory")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the plugins: %v\n%s", err, out)
	}
	return dir
}

func TestRemoteAcrossNetworkNamespaces(t *testing.T) {
	outer := t
	n := newNetns(t)
	bins := buildPlugins(t)
	dir := t.TempDir()
	pki, err := remotetest.NewPKI(dir, pluginIP)
	if err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "objects") // the replicas' shared directory
	ep1, ep2, ep3 := pluginIP+":7001", pluginIP+":7002", pluginIP+":7003"
	fsEnv := func(addr string) []string {
		return append(pki.Environ(addr), "OBJECTSTORE_FS_DIR="+data, "PLUGKIT_DRAIN_TIMEOUT=5s")
	}
	r1 := n.startReplica(t, filepath.Join(bins, "fs"), ep1, fsEnv(ep1))
	r2 := n.startReplica(t, filepath.Join(bins, "fs"), ep2, fsEnv(ep2))
	mem := n.startReplica(t, filepath.Join(bins, "memory"), ep3, pki.Environ(ep3))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	t.Run("refusals", func(t *testing.T) {
		for name, tlsConfig := range map[string]*tls.Config{
			"no client certificate":       pki.NoCertTLS(),
			"a certificate of another CA": pki.ForeignTLS(),
		} {
			opts := host.Options{Security: host.TLS(tlsConfig), Versions: []int{1}, DialOptions: []grpc.DialOption{n.dialer(t)}}
			dctx, dcancel := context.WithTimeout(ctx, 3*time.Second)
			c, err := host.Dial(dctx, host.Remote{Endpoints: []string{ep1}}, opts)
			dcancel()
			if err == nil {
				c.Close()
				t.Fatalf("a host with %s was served", name)
			}
			t.Logf("%s: %v", name, err)
		}
		// The right certificate is served, from the host's namespace only.
		c, err := host.Dial(ctx, host.Remote{Endpoints: []string{ep1, ep2}},
			host.Options{Security: host.TLS(pki.HostTLS()), Versions: []int{1}, DialOptions: []grpc.DialOption{n.dialer(t)}})
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
	})

	remote := func(name string, eps ...string) manager.Remote {
		return manager.Remote{Kind: objectstore.Kind, Name: name, Remote: host.Remote{Endpoints: eps}, TLS: pki.HostTLS(), DialOptions: []grpc.DialOption{n.dialer(t)}}
	}
	m := manager.New(manager.Config{
		Sources: []manager.Source{manager.Remotes(
			remote("example.com/fs", ep1, ep2),
			remote("example.com/memory", ep3),
		)},
		Launch: host.Command{Cookie: objectstore.Cookie},
	})
	defer m.Close()
	if err := m.Discover(ctx); err != nil {
		t.Fatal(err)
	}
	for _, b := range m.Binaries() {
		if b.Err != nil {
			t.Fatalf("%s: %v", b.Path, b.Err)
		}
	}
	store, err := objectstore.Open(ctx, m, "example.com/fs")
	if err != nil {
		t.Fatal(err)
	}
	if info := store.Info(); info.Major != 2 || info.Adapted || !info.Has(objectstore.CapPresign) {
		t.Fatalf("fs Info = %+v; want v2.1 directly", info)
	}

	acked := map[string]string{}
	var failures []error
	write := func(i int) {
		key, val := fmt.Sprintf("obj-%04d", i), fmt.Sprintf("value %d written across the veth", i)
		wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
		defer wcancel()
		if err := store.Put(wctx, key, []byte(val)); err != nil {
			failures = append(failures, err)
			return
		}
		acked[key] = val
	}
	for i := range 100 {
		write(i)
	}
	if len(failures) > 0 {
		t.Fatalf("writes failed with both replicas up: %v", failures)
	}

	t.Run("failover on SIGKILL", func(t *testing.T) {
		// Writes go on in a goroutine while replica 1 is killed.
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := 100; i < 300; i++ {
				write(i)
			}
		}()
		time.Sleep(50 * time.Millisecond)
		r1.kill(t)
		<-done
		t.Logf("%d writes acknowledged, %d failed (in flight on the killed replica)", len(acked), len(failures))
		// At most the calls in flight on the killed replica fail, each
		// with an error naming its endpoint; the rest fail over.
		if len(failures) > 5 {
			t.Fatalf("%d writes failed after the kill: %v; want only those in flight", len(failures), failures)
		}
		for _, err := range failures {
			var ee *host.EndpointError
			if !errors.As(err, &ee) || status.Code(ee) != codes.Unavailable || ee.Endpoint != ep1 {
				t.Errorf("a failed write: %v (%T); want a *host.EndpointError naming %s", err, err, ep1)
			}
		}
		for i := 300; i < 350; i++ {
			write(i)
		}
		if len(failures) > 5 {
			t.Fatalf("writes still fail after the failover: %v", failures[len(failures)-1])
		}
	})

	t.Run("reconnect when the replica comes back", func(t *testing.T) {
		r1 = n.startReplica(outer, filepath.Join(bins, "fs"), ep1, fsEnv(ep1))
		// With replica 2 gone too, only a reconnection to replica 1 can
		// serve the host: 20 writes in a row must succeed within 20 s.
		r2.kill(t)
		deadline := time.Now().Add(20 * time.Second)
		inARow := 0
		for i := 1000; inARow < 20; i++ {
			before := len(failures)
			write(i)
			if len(failures) == before {
				inARow++
				continue
			}
			inARow = 0
			if time.Now().After(deadline) {
				t.Fatalf("the host did not reconnect to the restarted replica within 20 s: %v", failures[len(failures)-1])
			}
			time.Sleep(100 * time.Millisecond)
		}
	})

	t.Run("every acknowledged write is readable", func(t *testing.T) {
		for key, want := range acked {
			got, err := store.Get(ctx, key)
			if err != nil || string(got) != want {
				t.Fatalf("Get(%s) = %q, %v; want %q, acknowledged before the kills", key, got, err, want)
			}
		}
		t.Logf("%d acknowledged writes read back", len(acked))
	})

	t.Run("adapter: a v1-only plugin served to a v2 host", func(t *testing.T) {
		ms, err := objectstore.Open(ctx, m, "example.com/memory")
		if err != nil {
			t.Fatal(err)
		}
		if info := ms.Info(); info.Major != 1 || !info.Adapted || info.Origin != manager.OriginRemote || info.Path != ep3 {
			t.Fatalf("memory Info = %+v; want major 1 adapted, remote", info)
		}
		if err := ms.Put(ctx, "a", []byte("adapted across the network")); err != nil {
			t.Fatal(err)
		}
		if st, err := ms.Stat(ctx, "a"); err != nil || st.Size != int64(len("adapted across the network")) {
			t.Fatalf("Stat through the adapter = %+v, %v", st, err)
		}
		if err := ms.Copy(ctx, "a", "b"); err != nil {
			t.Fatal(err)
		}
		if got, err := ms.Get(ctx, "b"); err != nil || string(got) != "adapted across the network" {
			t.Fatalf("Get(b) = %q, %v", got, err)
		}
	})

	t.Run("SIGTERM drains and exits", func(t *testing.T) {
		for _, r := range []*replica{r1, mem} {
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
	})
}
