package sandbox_test

// The test binary doubles as the sandboxed plugin: started with
// probeEnv=1 it serves the Probe service below instead of running tests
// (see TestMain). Probe.Do takes one command and answers in words, so that
// a test can ask the plugin to try something from inside the sandbox and
// see what happened.

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/plugkit/plugkit/broker"
	"github.com/plugkit/plugkit/handshake"
	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/plugin"
	"github.com/plugkit/plugkit/sandbox"
)

var testCookie = handshake.Cookie{Key: "PLUGKIT_SANDBOX_TEST_COOKIE", Value: "sandboxed"}

const (
	probeEnv    = "PLUGKIT_SANDBOX_TEST_PLUGIN"
	noWatchEnv  = "PLUGKIT_SANDBOX_TEST_NOWATCH" // the probe does not watch its parent
	sleepEnv    = "PLUGKIT_SANDBOX_TEST_SLEEP"   // the test binary sleeps (a child of the probe's)
	hostEnv     = "PLUGKIT_SANDBOX_TEST_HOST"    // the test binary is a host of one sandboxed probe
	probeMethod = "/plugkit.sandboxtest.Probe/Do"
)

type probe struct{ broker *broker.Broker }

var probeDesc = grpc.ServiceDesc{
	ServiceName: "plugkit.sandboxtest.Probe",
	HandlerType: (*any)(nil),
	Methods: []grpc.MethodDesc{{
		MethodName: "Do",
		Handler: func(srv any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
			in := new(wrapperspb.StringValue)
			if err := dec(in); err != nil {
				return nil, err
			}
			return wrapperspb.String(srv.(*probe).do(ctx, in.GetValue())), nil
		},
	}},
}

// do runs one command: "write PATH", "read PATH", "ls DIR", "dial
// HOST:PORT", "loopback", "remount", "status", "signal PID" (signal 0),
// "pids", "openw PATH", "ns NAME", "shmget KEY", "sethostname NAME",
// "mounts", "mount", "unshare", "addkey", "ptrace", "alloc MIB", "spawn
// ARG", "exit CODE", "burn MS", "nofile" or "callback ID". It answers
// "ok", what it read, or the error.
func (p *probe) do(ctx context.Context, cmd string) string {
	op, arg, _ := strings.Cut(cmd, " ")
	run, ok := probeCommands[op]
	if !ok {
		return "unknown probe command " + cmd
	}
	answer, err := run(p, ctx, arg)
	if err != nil {
		return err.Error()
	}
	return answer
}

// probeCommand runs one probe command with its argument. It answers what
// it read, or "ok" (probeOK); an error is answered as its text.
type probeCommand func(p *probe, ctx context.Context, arg string) (string, error)

// probeOK is the answer of a command that has nothing to say but how it went.
func probeOK(err error) (string, error) { return "ok", err }

// probeCommands maps each command do knows to what runs it.
var probeCommands = map[string]probeCommand{
	"write": func(_ *probe, _ context.Context, arg string) (string, error) {
		return probeOK(os.WriteFile(arg, []byte("written in the sandbox"), 0o644))
	},
	"read": func(_ *probe, _ context.Context, arg string) (string, error) {
		b, err := os.ReadFile(arg)
		return string(b), err
	},
	"ls": func(_ *probe, _ context.Context, arg string) (string, error) {
		return listDir(arg, func(string) bool { return true }, "\n")
	},
	"dial": func(_ *probe, _ context.Context, arg string) (string, error) {
		c, err := net.DialTimeout("tcp", arg, 2*time.Second)
		if err == nil {
			c.Close()
		}
		return probeOK(err)
	},
	"loopback": func(*probe, context.Context, string) (string, error) { return probeOK(loopback()) },
	"remount": func(*probe, context.Context, string) (string, error) {
		// Try to make the root writable again.
		return probeOK(syscall.Mount("", "/", "", syscall.MS_REMOUNT|syscall.MS_BIND, ""))
	},
	"status": func(*probe, context.Context, string) (string, error) { return procStatus() },
	"signal": func(_ *probe, _ context.Context, arg string) (string, error) {
		var pid int
		fmt.Sscan(arg, &pid)
		return probeOK(syscall.Kill(pid, 0))
	},
	"pids": func(*probe, context.Context, string) (string, error) {
		return listDir("/proc", func(name string) bool { return name[0] >= '0' && name[0] <= '9' }, " ")
	},
	"openw": func(_ *probe, _ context.Context, arg string) (string, error) {
		// Open an existing file for writing, without creating or
		// truncating it.
		f, err := os.OpenFile(arg, os.O_WRONLY, 0)
		if err == nil {
			f.Close()
		}
		return probeOK(err)
	},
	"ns": func(_ *probe, _ context.Context, arg string) (string, error) {
		return os.Readlink("/proc/self/ns/" + arg)
	},
	"shmget": func(_ *probe, _ context.Context, arg string) (string, error) {
		var key int
		fmt.Sscan(arg, &key)
		_, err := unix.SysvShmGet(key, 0, 0)
		return probeOK(err)
	},
	"sethostname": func(_ *probe, _ context.Context, arg string) (string, error) {
		return probeOK(unix.Sethostname([]byte(arg)))
	},
	"mounts": func(*probe, context.Context, string) (string, error) { return procMounts() },
	"mount": func(*probe, context.Context, string) (string, error) {
		return probeOK(unix.Mount("tmpfs", "/tmp", "tmpfs", 0, ""))
	},
	"unshare": func(*probe, context.Context, string) (string, error) { return probeOK(unshareFS()) },
	"addkey": func(*probe, context.Context, string) (string, error) {
		_, err := unix.AddKey("user", "plugkit-sandbox-test", []byte("secret"), unix.KEY_SPEC_PROCESS_KEYRING)
		return probeOK(err)
	},
	"ptrace": func(*probe, context.Context, string) (string, error) {
		// Attach to a process of the plugin's own, its child, which a
		// process of the same user without capabilities may trace.
		return ptraceChild(), nil
	},
	"alloc": func(_ *probe, _ context.Context, arg string) (string, error) { return probeOK(alloc(arg)) },
	"spawn": func(_ *probe, _ context.Context, arg string) (string, error) { return spawn(arg), nil },
	"exit": func(_ *probe, _ context.Context, arg string) (string, error) {
		// Exit at once with the status given, saying nothing.
		var code int
		fmt.Sscan(arg, &code)
		os.Exit(code)
		return "", nil
	},
	"burn":     func(_ *probe, _ context.Context, arg string) (string, error) { return probeOK(burn(arg)) },
	"nofile":   func(*probe, context.Context, string) (string, error) { return openNullUntilRefused(), nil },
	"callback": (*probe).callback,
}

// listDir answers the names in dir that keep accepts, joined by sep.
func listDir(dir string, keep func(name string) bool, sep string) (string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	names := []string{}
	for _, e := range entries {
		if keep(e.Name()) {
			names = append(names, e.Name())
		}
	}
	return strings.Join(names, sep), nil
}

// procStatus answers the capability, no-new-privileges, seccomp and
// identity lines of /proc/self/status, spaces squeezed.
func procStatus() (string, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "", err
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "Cap") || strings.HasPrefix(l, "NoNewPrivs") || strings.HasPrefix(l, "Seccomp:") ||
			strings.HasPrefix(l, "Uid:") || strings.HasPrefix(l, "Gid:") || strings.HasPrefix(l, "Groups:") {
			out = append(out, strings.Join(strings.Fields(l), " "))
		}
	}
	return strings.Join(out, "\n"), nil
}

// procMounts answers each mount as "mount-point type options".
func procMounts() (string, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		pre, post, _ := strings.Cut(l, " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if len(f) >= 6 && len(g) >= 1 {
			out = append(out, f[4]+" "+g[0]+" "+f[5])
		}
	}
	return strings.Join(out, "\n"), nil
}

// unshareFS calls unshare(CLONE_FS), which needs no privilege: only the
// filter refuses it. The thread is locked and never unlocked, so that Go
// discards it should the call succeed.
func unshareFS() error {
	done := make(chan error)
	go func() {
		runtime.LockOSThread()
		done <- unix.Unshare(unix.CLONE_FS)
	}()
	return <-done
}

// alloc allocates and touches the MiB of memory given, kept in hoard.
func alloc(arg string) error {
	var mib int
	fmt.Sscan(arg, &mib)
	for range mib {
		b := make([]byte, 1<<20)
		for i := range b {
			b[i] = 1
		}
		hoard = append(hoard, b)
	}
	return nil
}

// burn keeps two CPUs busy for the milliseconds given.
func burn(arg string) error {
	var ms int
	fmt.Sscan(arg, &ms)
	end := time.Now().Add(time.Duration(ms) * time.Millisecond)
	done := make(chan struct{})
	for range 2 {
		go func() {
			for time.Now().Before(end) {
			}
			done <- struct{}{}
		}()
	}
	<-done
	<-done
	return nil
}

// openNullUntilRefused opens /dev/null until refused (at most 10000
// times), closes what it opened and answers how many it opened.
func openNullUntilRefused() string {
	var files []*os.File
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	for len(files) < 10000 {
		f, err := os.Open("/dev/null")
		if err != nil {
			return fmt.Sprintf("opened %d more: %v", len(files), err)
		}
		files = append(files, f)
	}
	return "opened 10000"
}

// callback dials the host's broker service of the id given and asks its
// health service about "host".
func (p *probe) callback(ctx context.Context, arg string) (string, error) {
	var id uint32
	fmt.Sscan(arg, &id)
	conn, err := p.broker.Dial(ctx, id)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: "host"})
	if err != nil {
		return "", err
	}
	return "host says " + resp.GetStatus().String(), nil
}

// ptraceChild starts a child (this binary, sleeping) and tries to attach
// to it with ptrace(2); it answers "ok" or the error.
func ptraceChild() string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/proc/self/exe")
	cmd.Env = append(os.Environ(), sleepEnv+"=1")
	if err := cmd.Start(); err != nil {
		return "starting the child: " + err.Error()
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	done := make(chan error)
	go func() {
		// The tracer is a thread: keep this one, and let Go discard it.
		runtime.LockOSThread()
		done <- unix.PtraceAttach(cmd.Process.Pid)
	}()
	if err := <-done; err != nil {
		return err.Error()
	}
	return "ok"
}

// hoard keeps what the alloc probe allocated.
var hoard [][]byte

// spawn starts up to the number of /bin/sleep processes arg gives, until
// one fails to start, then ends them; it answers how many started and
// why it stopped.
func spawn(arg string) string {
	var n int
	fmt.Sscan(arg, &n)
	var cmds []*exec.Cmd
	defer func() {
		for _, c := range cmds {
			c.Process.Kill()
			c.Wait()
		}
	}()
	for len(cmds) < n {
		c := exec.Command("/bin/sleep", "30")
		if err := c.Start(); err != nil {
			return fmt.Sprintf("started %d, then: %v", len(cmds), err)
		}
		cmds = append(cmds, c)
	}
	return fmt.Sprintf("started %d", len(cmds))
}

// loopback listens on 127.0.0.1 and connects to itself.
func loopback() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Close()
		}
	}()
	c, err := net.DialTimeout("tcp", ln.Addr().String(), 2*time.Second)
	if err != nil {
		return err
	}
	return c.Close()
}

func runProbePlugin() {
	cfg := plugin.Config{
		Cookie: testCookie,
		Versions: map[int]plugin.Register{1: func(s *grpc.Server, b *broker.Broker) error {
			s.RegisterService(&probeDesc, &probe{broker: b})
			return nil
		}},
	}
	if os.Getenv(noWatchEnv) == "" {
		plugin.Serve(cfg)
	}
	// plugin.Serve, minus the parent watch.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	err := plugin.RunIn(ctx, cfg, plugin.Harness{NoParentWatch: true})
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// runHost starts a sandboxed probe that does not watch its parent, prints
// its pid and waits to be killed.
func runHost() {
	exe, _ := os.Executable()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	c, err := host.Start(ctx, host.Command{
		Path:   exe,
		Env:    []string{probeEnv + "=1", noWatchEnv + "=1", "GORACE=atexit_sleep_ms=0"},
		Cookie: testCookie,
		Runner: sandbox.Runner{},
	}, host.Options{Versions: []int{1}})
	cancel()
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fmt.Println(c.Pid())
	time.Sleep(time.Minute)
	c.Close()
	os.Exit(0)
}
