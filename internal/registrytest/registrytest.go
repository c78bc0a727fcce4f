package registrytest

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plugkit/plugkit/internal/testutil"
	"golang.org/x/crypto/bcrypt"
)

// Options configures a registry; the zero value is plain HTTP without auth.
type Options struct {
	// TLS, when set, serves HTTPS with this configuration (a certificate
	// for 127.0.0.1).
	TLS *tls.Config
	// Username and Password, when Username is set, require HTTP basic
	// auth through the registry's htpasswd access controller.
	Username, Password string
	// Wrap, when set, wraps the handler that passes each request on to
	// the registry (a reverse proxy in the test binary), so that a test
	// can slow it down, count requests or answer some itself.
	Wrap func(http.Handler) http.Handler
}

// Registry is a running registry.
type Registry struct {
	// Host is "127.0.0.1:PORT", the registry part of a reference.
	Host string
	// URL is "http://127.0.0.1:PORT" or "https://...".
	URL string
}

// program is the registry program (testdata/registry), built once for
// the test binary by the first Start and removed by Remove.
var program struct {
	sync.Mutex
	dir, path string
}

// programPkg is the registry program's package.
const programPkg = "github.com/plugkit/plugkit/internal/registrytest/testdata/registry"

// startTimeout bounds the registry program's start: its build (a first,
// cold build compiles its dependencies: a minute or more on a loaded
// machine) and its first line.
const startTimeout = 10 * time.Minute

// stopTimeout bounds each wait for the registry program's end: after its
// standard input is closed (it shuts down within 5 seconds), and again
// after it is killed.
const stopTimeout = 30 * time.Second

// Remove removes the registry program that Start built for this test
// binary. Call it after the tests, from TestMain, before testutil.Main
// looks for files left behind:
//
//	os.Exit(testutil.Main(testutil.Then(m, registrytest.Remove)))
func Remove() {
	program.Lock()
	defer program.Unlock()
	if program.dir != "" {
		os.RemoveAll(program.dir)
		program.dir, program.path = "", ""
	}
}

// binary returns the registry program's path, building it first if this
// test binary has not.
func binary(ctx context.Context) (string, error) {
	program.Lock()
	defer program.Unlock()
	if program.path != "" {
		return program.path, nil
	}
	dir, err := os.MkdirTemp("", "registry")
	if err != nil {
		return "", err
	}
	path, err := testutil.BuildBinary(ctx, filepath.Join(dir, "registry"), programPkg)
	if err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	program.dir, program.path = dir, path
	return path, nil
}

// Start runs a registry until the test ends: the CNCF distribution
// registry as a program of its own (testdata/registry), serving plain
// HTTP on loopback. With TLS or Wrap set, the test binary serves in front
// of it, on a loopback listener of its own, and passes each request on
// through a reverse proxy that tells the registry the host and scheme the
// client used (X-Forwarded-Host, X-Forwarded-Proto), so the URLs it
// answers with (an upload's Location) name the front.
//
// It stores blobs with the registry's filesystem driver in the test's
// temporary directory (on Windows in memory: the filesystem driver
// renames files it still holds open, which Windows refuses).
func Start(t testing.TB, opts Options) *Registry {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	bin, err := binary(ctx)
	if err != nil {
		t.Fatalf("registrytest: building the registry program: %v", err)
	}
	var args []string
	if runtime.GOOS != "windows" {
		args = append(args, "-root", testutil.TempDir(t))
	}
	if opts.Username != "" {
		hash, err := bcrypt.GenerateFromPassword([]byte(opts.Password), bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(testutil.TempDir(t), "htpasswd")
		if err := os.WriteFile(path, fmt.Appendf(nil, "%s:%s\n", opts.Username, hash), 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, "-htpasswd", path)
	}
	host, err := run(ctx, t, bin, args)
	if err != nil {
		t.Fatalf("registrytest: %v", err)
	}
	if opts.TLS == nil && opts.Wrap == nil {
		return &Registry{Host: host, URL: "http://" + host}
	}
	return front(t, host, opts)
}

// run starts the registry program bin with args, stopped when the test
// ends, and returns the address it serves on.
func run(ctx context.Context, t testing.TB, bin string, args []string) (string, error) {
	cmd := exec.Command(bin, args...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return "", err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", err
	}
	stderr := &capped{max: 64 << 10}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("starting the registry program: %w", err)
	}
	type line struct {
		addr string
		err  error
	}
	first := make(chan line, 1)
	exited := make(chan struct{}) // closed once waitErr is set
	var waitErr error
	go func() {
		r := bufio.NewReader(stdout)
		addr, err := r.ReadString('\n')
		first <- line{strings.TrimSpace(addr), err}
		// Then nothing: read to the end, so that the program never
		// blocks writing, before Wait closes the pipe.
		io.Copy(io.Discard, r)
		waitErr = cmd.Wait()
		close(exited)
	}()
	// wait reports whether the program has exited within d.
	wait := func(d time.Duration) bool {
		timer := time.NewTimer(d)
		defer timer.Stop()
		select {
		case <-exited:
			return true
		case <-timer.C:
			return false
		}
	}
	t.Cleanup(func() {
		// The program shuts down within 5 seconds of its standard
		// input's end.
		stdin.Close()
		if !wait(stopTimeout) {
			cmd.Process.Kill()
			if !wait(stopTimeout) {
				t.Errorf("registrytest: the registry program (process %d) has not exited %v after it was killed", cmd.Process.Pid, stopTimeout)
			}
		}
	})
	select {
	case l := <-first:
		if l.err != nil {
			// Its standard error is complete once it has been waited for.
			status := "still running"
			if wait(stopTimeout) {
				status = "exited 0"
				if waitErr != nil {
					status = waitErr.Error()
				}
			}
			return "", fmt.Errorf("the registry program ended before it served (%s: %v); its errors:\n%s", status, l.err, stderr)
		}
		if _, _, err := net.SplitHostPort(l.addr); err != nil {
			return "", fmt.Errorf("the registry program's first line is %q, not its address: %v", l.addr, err)
		}
		return l.addr, nil
	case <-ctx.Done():
		return "", fmt.Errorf("the registry program did not say its address within %v; its errors:\n%s", startTimeout, stderr)
	}
}

// front serves, on a loopback listener of the test binary's, the
// registry at host through a reverse proxy, with opts.TLS and wrapped in
// opts.Wrap, until the test ends.
func front(t testing.TB, host string, opts Options) *Registry {
	target := &url.URL{Scheme: "http", Host: host}
	// A transport of its own, whose connections to the program end with
	// the test (not http.DefaultTransport's pool); it passes the client's
	// Accept-Encoding on as it is, and no proxy from the environment.
	transport := &http.Transport{DisableCompression: true}
	var h http.Handler = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.SetXForwarded()
		},
		Transport: transport,
		// A client that goes away mid-request (a test's deadline) is not
		// an error worth a line in the test's output.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	if opts.Wrap != nil {
		h = opts.Wrap(h)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	scheme := "http"
	if opts.TLS != nil {
		ln = tls.NewListener(ln, opts.TLS)
		scheme = "https"
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() {
		// A request still in the proxy after 5 seconds (a test's Wrap
		// holding it) is cut off, so that the program's stop that follows
		// finds no connection open.
		ctx, stop := context.WithTimeout(context.Background(), 5*time.Second)
		defer stop()
		if srv.Shutdown(ctx) != nil {
			srv.Close()
		}
		transport.CloseIdleConnections()
	})
	addr := ln.Addr().String()
	return &Registry{Host: addr, URL: scheme + "://" + addr}
}

// capped keeps the first max bytes written to it.
type capped struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (c *capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := c.max - len(c.b); n > 0 {
		c.b = append(c.b, p[:min(n, len(p))]...)
	}
	return len(p), nil
}

func (c *capped) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return string(c.b)
}
