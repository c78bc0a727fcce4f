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
// "mounts", "mount", "unshare", "addkey", "ptrace" or "callback ID". It
// answers "ok", what it read, or the error.
func (p *probe) do(ctx context.Context, cmd string) string {
	op, arg, _ := strings.Cut(cmd, " ")
	var err error
	switch op {
	case "write":
		err = os.WriteFile(arg, []byte("written in the sandbox"), 0o644)
	case "read":
		var b []byte
		if b, err = os.ReadFile(arg); err == nil {
			return string(b)
		}
	case "ls":
		var entries []os.DirEntry
		if entries, err = os.ReadDir(arg); err == nil {
			names := []string{}
			for _, e := range entries {
				names = append(names, e.Name())
			}
			return strings.Join(names, "\n")
		}
	case "dial":
		var c net.Conn
		if c, err = net.DialTimeout("tcp", arg, 2*time.Second); err == nil {
			c.Close()
		}
	case "loopback":
		err = loopback()
	case "remount":
		// Try to make the root writable again.
		err = syscall.Mount("", "/", "", syscall.MS_REMOUNT|syscall.MS_BIND, "")
	case "status":
		var b []byte
		if b, err = os.ReadFile("/proc/self/status"); err == nil {
			var out []string
			for _, l := range strings.Split(string(b), "\n") {
				if strings.HasPrefix(l, "Cap") || strings.HasPrefix(l, "NoNewPrivs") || strings.HasPrefix(l, "Seccomp:") ||
					strings.HasPrefix(l, "Uid:") || strings.HasPrefix(l, "Gid:") || strings.HasPrefix(l, "Groups:") {
					out = append(out, strings.Join(strings.Fields(l), " "))
				}
			}
			return strings.Join(out, "\n")
		}
	case "signal":
		var pid int
		fmt.Sscan(arg, &pid)
		err = syscall.Kill(pid, 0)
	case "pids":
		var entries []os.DirEntry
		if entries, err = os.ReadDir("/proc"); err == nil {
			pids := []string{}
			for _, e := range entries {
				if e.Name()[0] >= '0' && e.Name()[0] <= '9' {
					pids = append(pids, e.Name())
				}
			}
			return strings.Join(pids, " ")
		}
	case "openw":
		// Open an existing file for writing, without creating or
		// truncating it.
		var f *os.File
		if f, err = os.OpenFile(arg, os.O_WRONLY, 0); err == nil {
			f.Close()
		}
	case "ns":
		var link string
		if link, err = os.Readlink("/proc/self/ns/" + arg); err == nil {
			return link
		}
	case "shmget":
		var key int
		fmt.Sscan(arg, &key)
		_, err = unix.SysvShmGet(key, 0, 0)
	case "sethostname":
		err = unix.Sethostname([]byte(arg))
	case "mounts":
		// Each mount as "mount-point type options".
		var b []byte
		if b, err = os.ReadFile("/proc/self/mountinfo"); err == nil {
			var out []string
			for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
				pre, post, _ := strings.Cut(l, " - ")
				f, g := strings.Fields(pre), strings.Fields(post)
				if len(f) >= 6 && len(g) >= 1 {
					out = append(out, f[4]+" "+g[0]+" "+f[5])
				}
			}
			return strings.Join(out, "\n")
		}
	case "mount":
		err = unix.Mount("tmpfs", "/tmp", "tmpfs", 0, "")
	case "unshare":
		// CLONE_FS needs no privilege: only the filter refuses it. The
		// thread is locked and never unlocked, so that Go discards it
		// should the call succeed.
		done := make(chan error)
		go func() {
			runtime.LockOSThread()
			done <- unix.Unshare(unix.CLONE_FS)
		}()
		err = <-done
	case "addkey":
		_, err = unix.AddKey("user", "plugkit-sandbox-test", []byte("secret"), unix.KEY_SPEC_PROCESS_KEYRING)
	case "ptrace":
		// Attach to a process of the plugin's own, its child, which a
		// process of the same user without capabilities may trace.
		return ptraceChild()
	case "callback":
		var id uint32
		fmt.Sscan(arg, &id)
		var conn *grpc.ClientConn
		if conn, err = p.broker.Dial(ctx, id); err == nil {
			defer conn.Close()
			var resp *healthpb.HealthCheckResponse
			if resp, err = healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: "host"}); err == nil {
				return "host says " + resp.GetStatus().String()
			}
		}
	default:
		return "unknown probe command " + cmd
	}
	if err != nil {
		return err.Error()
	}
	return "ok"
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
	plugin.Serve(plugin.Config{
		Cookie:        testCookie,
		NoParentWatch: os.Getenv(noWatchEnv) != "",
		Versions: map[int]plugin.Register{1: func(s *grpc.Server, b *broker.Broker) error {
			s.RegisterService(&probeDesc, &probe{broker: b})
			return nil
		}},
	})
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
