package release

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/plugkit/plugkit/describe"
	catalogv1 "github.com/plugkit/plugkit/gen/plugkit/catalog/v1"
	"github.com/plugkit/plugkit/handshake"
	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/osdep"
	"github.com/plugkit/plugkit/wire"
)

// describeStaged starts the staged binary and returns its Describe
// answer, checked as the manager checks it. Where execByFD, the host
// executes the read-only descriptor stage checked (see staged); elsewhere
// it hashes the file it starts against sha256Hex (the pin), so either
// way the binary described is the one whose digest was verified.
//
// A WebAssembly module (st.module) runs in guests (Target.Guests),
// pinned to sha256Hex: host.Start reads it, checks it and runs what it
// checked.
func describeStaged(ctx context.Context, st *staged, cookie handshake.Cookie, sha256Hex string, guests host.GuestRunner) (*catalogv1.DescribeResponse, error) {
	if cookie.Key == "" {
		return nil, fmt.Errorf("describe %s: no magic cookie: set the plugin's handshake cookie (--cookie KEY=VALUE)", st.path)
	}
	cmd := host.Command{Path: st.tmp, Cookie: cookie}
	var d *catalogv1.DescribeResponse
	var err error
	switch {
	case st.module:
		cmd.SHA256 = sha256Hex
		d, err = describeModule(ctx, cmd, guests, "Target.Guests")
	case st.ro != nil:
		cmd.Runner = execFile(st.ro)
		d, err = describeUnlessBusy(ctx, cmd)
	default:
		cmd.SHA256 = sha256Hex
		d, err = describeUnlessBusy(ctx, cmd)
	}
	var ce *host.ChecksumError
	if errors.As(err, &ce) {
		return nil, fmt.Errorf("%w: the binary %s changed on disk after its digest was checked: %v; nothing was installed", ErrTampered, st.path, ce)
	}
	if err != nil {
		return nil, fmt.Errorf("describe %s: %w", st.path, err)
	}
	return d, nil
}

// busyBound bounds how long describeUnlessBusy starts a staged binary
// again while the kernel refuses it as open for writing (ETXTBSY).
const busyBound = 2 * time.Second

// describeUnlessBusy is describeCommand, started again (after 5 ms,
// doubling to at most 200 ms, for at most busyBound) while the start
// fails with ETXTBSY. Install closed its own descriptor for writing
// before the start, but in a program whose other goroutines start
// processes, a child forked in that moment holds a copy of it until the
// child executes (a fork copies every descriptor); the kernel refuses to
// start a file open for writing anywhere, so the start would fail now and
// then with "text file busy" for a reason gone a moment later.
func describeUnlessBusy(ctx context.Context, cmd host.Command) (*catalogv1.DescribeResponse, error) {
	deadline := time.Now().Add(busyBound)
	for wait := 5 * time.Millisecond; ; wait = min(2*wait, 200*time.Millisecond) {
		d, err := describeCommand(ctx, cmd, describe.DefaultTimeout)
		if err == nil || !errors.Is(err, syscall.ETXTBSY) || time.Now().Add(wait).After(deadline) {
			return d, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(wait):
		}
	}
}

// describeBinary starts the binary at path and returns its Describe
// answer (for Push, which describes a local build), within timeout.
func describeBinary(ctx context.Context, path string, cookie handshake.Cookie, timeout time.Duration) (*catalogv1.DescribeResponse, error) {
	if cookie.Key == "" {
		return nil, fmt.Errorf("describe %s: no magic cookie: set the plugin's handshake cookie (--cookie KEY=VALUE)", path)
	}
	d, err := describeCommand(ctx, host.Command{Path: path, Cookie: cookie}, timeout)
	if err != nil {
		return nil, fmt.Errorf("describe %s: %w", path, err)
	}
	return d, nil
}

// describeModule runs the WebAssembly module cmd.Path names in guests
// for its Describe answer; field names where the caller set guests, for
// the error without one. A runner that compiles ahead (wasmhost.Runtime)
// compiles the module first, outside the describe timeout, as a manager does
// (see describe.Run). The caller checked cmd.Cookie.
func describeModule(ctx context.Context, cmd host.Command, guests host.GuestRunner, field string) (*catalogv1.DescribeResponse, error) {
	if guests == nil {
		return nil, fmt.Errorf("it is a WebAssembly module and %s is nil: set it to a runtime for modules (wasmhost.New; the plugkit command does), or give a native binary", field)
	}
	cmd.Runner = guests
	return describeCommand(ctx, cmd, describe.DefaultTimeout)
}

// describeCommand describes the plugin cmd names, as the manager does
// (describe.Run: its describe line, or its Describe over gRPC, checked),
// within timeout (describe.DefaultTimeout, as the manager bounds it, but
// in tests), and leaves nothing running.
func describeCommand(ctx context.Context, cmd host.Command, timeout time.Duration) (*catalogv1.DescribeResponse, error) {
	return describe.Run(ctx, cmd, host.Options{Versions: []int{wire.CatalogProtocolVersion}}, timeout)
}

// execFile is a host.Runner that executes the open file f instead of the
// command's path (osdep.ExecFile, as a pinned host.Start does).
func execFile(f *os.File) host.Runner { return fileRunner{f} }

// fileRunner is execFile's runner.
type fileRunner struct{ f *os.File }

// Prepare makes the launch execute the open file.
func (r fileRunner) Prepare(l *host.Launch) error {
	osdep.ExecFile(l.Cmd, r.f)
	return nil
}
