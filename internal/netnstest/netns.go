//go:build linux

package netnstest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
)

// The addresses of the plugins' and the host's side of the veth pair.
const (
	PluginIP = "10.213.0.1"
	HostIP   = "10.213.0.2"
)

// Pair is two network namespaces joined by a veth pair.
type Pair struct {
	Plugins, Host string // namespace names
}

// RequireRoot fails tb when namespaces cannot be made here.
func RequireRoot(tb testing.TB) {
	tb.Helper()
	if os.Geteuid() != 0 {
		tb.Fatalf("this test makes network namespaces and needs root (uid 0, as CI runs it); it runs as uid %d: run it as root", os.Geteuid())
	}
	if _, err := exec.LookPath("ip"); err != nil {
		tb.Fatalf("this test makes network namespaces with iproute2's `ip`, which is not on PATH: install iproute2 (%v)", err)
	}
}

func run(tb testing.TB, args ...string) {
	tb.Helper()
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		tb.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// New makes the pair, named after prefix and this process's pid, and
// deletes it when tb's test ends.
func New(tb testing.TB, prefix string) *Pair {
	RequireRoot(tb)
	pid := os.Getpid()
	p := &Pair{Plugins: fmt.Sprintf("%sp%d", prefix, pid), Host: fmt.Sprintf("%sh%d", prefix, pid)}
	vp, vh := fmt.Sprintf("%sv%dp", prefix, pid), fmt.Sprintf("%sv%dh", prefix, pid)
	if len(vp) > 15 {
		tb.Fatalf("interface name %q is longer than 15 bytes: use a shorter prefix", vp)
	}
	tb.Cleanup(func() {
		for _, ns := range []string{p.Plugins, p.Host} {
			if out, err := exec.Command("ip", "netns", "del", ns).CombinedOutput(); err != nil && !strings.Contains(string(out), "No such file") {
				tb.Errorf("deleting namespace %s: %v %s", ns, err, out)
			}
		}
	})
	run(tb, "ip", "netns", "add", p.Plugins)
	run(tb, "ip", "netns", "add", p.Host)
	run(tb, "ip", "link", "add", vp, "netns", p.Plugins, "type", "veth", "peer", "name", vh, "netns", p.Host)
	run(tb, "ip", "-n", p.Plugins, "addr", "add", PluginIP+"/30", "dev", vp)
	run(tb, "ip", "-n", p.Host, "addr", "add", HostIP+"/30", "dev", vh)
	for _, a := range [][2]string{{p.Plugins, vp}, {p.Plugins, "lo"}, {p.Host, vh}, {p.Host, "lo"}} {
		run(tb, "ip", "-n", a[0], "link", "set", a[1], "up")
	}
	return p
}

// Command runs bin in the plugins' namespace (ip netns exec execs it: the
// command's pid is bin's).
func (p *Pair) Command(bin string, args ...string) *exec.Cmd {
	return exec.Command("ip", append([]string{"netns", "exec", p.Plugins, bin}, args...)...)
}

// DialContext dials addr from inside the host's namespace: the dial runs
// on an OS thread moved into it, which is never moved back (it ends with
// its goroutine), so the rest of the process stays where it is.
func (p *Pair) DialContext(ctx context.Context, addr string) (net.Conn, error) {
	path := filepath.Join("/run/netns", p.Host)
	type result struct {
		c   net.Conn
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // not unlocked: the thread exits with the goroutine
		f, err := os.Open(path)
		if err != nil {
			ch <- result{nil, err}
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			ch <- result{nil, fmt.Errorf("entering namespace %s: %w", p.Host, err)}
			return
		}
		c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		ch <- result{c, err}
	}()
	r := <-ch
	return r.c, r.err
}

// Dialer is DialContext as a gRPC dial option.
func (p *Pair) Dialer() grpc.DialOption { return grpc.WithContextDialer(p.DialContext) }
