package release

import (
	"context"
	"errors"
	"fmt"
	"os"

	catalogv1 "github.com/plugkit/plugkit/gen/plugkit/catalog/v1"
	"github.com/plugkit/plugkit/handshake"
	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/osdep"
	"github.com/plugkit/plugkit/manager"
	"github.com/plugkit/plugkit/wasmhost"
	"github.com/plugkit/plugkit/wire"
)

// describeStaged starts the staged binary and returns its Describe
// answer, checked as the manager checks it. Where execByFD, the host
// executes the read-only descriptor stage checked (see staged); elsewhere
// it hashes the file it starts against sha256Hex (the pin), so either
// way the binary described is the one whose digest was verified.
//
// A WebAssembly module (st.module) runs in a wasmhost.Runtime with
// wasmCache as its compilation cache (see describeModule), pinned to
// sha256Hex: host.Start reads it, checks it and runs what it checked.
func describeStaged(ctx context.Context, st *staged, cookie handshake.Cookie, sha256Hex, wasmCache string) (*catalogv1.DescribeResponse, error) {
	if cookie.Key == "" {
		return nil, fmt.Errorf("describe %s: no magic cookie: set the plugin's handshake cookie (--cookie KEY=VALUE)", st.path)
	}
	cmd := host.Command{Path: st.tmp, Cookie: cookie}
	var d *catalogv1.DescribeResponse
	var err error
	switch {
	case st.module:
		cmd.SHA256 = sha256Hex
		d, err = describeModule(ctx, cmd, wasmCache)
	case st.ro != nil:
		cmd.Runner = execFile(st.ro)
		d, err = describe(ctx, cmd)
	default:
		cmd.SHA256 = sha256Hex
		d, err = describe(ctx, cmd)
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

// describeBinary starts the binary at path and returns its Describe
// answer (for Push, which describes a local build).
func describeBinary(ctx context.Context, path string, cookie handshake.Cookie) (*catalogv1.DescribeResponse, error) {
	if cookie.Key == "" {
		return nil, fmt.Errorf("describe %s: no magic cookie: set the plugin's handshake cookie (--cookie KEY=VALUE)", path)
	}
	d, err := describe(ctx, host.Command{Path: path, Cookie: cookie})
	if err != nil {
		return nil, fmt.Errorf("describe %s: %w", path, err)
	}
	return d, nil
}

// describeModule runs the WebAssembly module cmd.Path names in a
// wasmhost.Runtime of its own for its Describe answer. It compiles the
// module first, outside describeTimeout, as a manager does: into the
// compilation cache cacheDir when given (seconds for a large module, and
// then a manager using the same directory starts it compiled), otherwise
// with wazero's interpreter, which is ready several times sooner and is
// enough for one Describe. The caller checked cmd.Cookie.
func describeModule(ctx context.Context, cmd host.Command, cacheDir string) (*catalogv1.DescribeResponse, error) {
	rt := wasmhost.New(wasmhost.Config{CacheDir: cacheDir, Interpret: cacheDir == ""})
	defer rt.Close(context.Background()) // the guest ended with its Client: no wait
	if err := rt.CompileFile(ctx, cmd.Path); err != nil {
		return nil, err
	}
	cmd.Runner = rt
	return describe(ctx, cmd)
}

// describeTimeout bounds one binary's start and Describe, as the
// manager bounds them; a variable for the tests.
var describeTimeout = manager.DefaultDescribeTimeout

// describe starts cmd, asks for its Describe answer, checked as the
// manager checks it, and stops it, within describeTimeout.
func describe(ctx context.Context, cmd host.Command) (*catalogv1.DescribeResponse, error) {
	dctx, cancel := context.WithTimeout(ctx, describeTimeout)
	defer cancel()
	late := func(err error) error {
		if err != nil && ctx.Err() == nil && dctx.Err() != nil {
			return fmt.Errorf("the plugin did not start and answer Describe within %v, as the manager requires: fix the plugin (%w)", describeTimeout, err)
		}
		return err
	}
	c, err := host.Start(dctx, cmd, host.Options{Versions: []int{wire.CatalogProtocolVersion}})
	if err != nil {
		// The deadline may run out during the start itself (its health
		// check, on a loaded machine): name it there too.
		return nil, late(err)
	}
	defer c.Close()
	d, err := manager.DescribeCatalog(dctx, c.Conn())
	return d, late(err)
}

// execFile is a host.Runner that executes the open file f instead of the
// command's path (osdep.ExecFile, as a pinned host.Start does).
func execFile(f *os.File) host.Runner {
	return host.RunnerFunc(func(l *host.Launch) error {
		osdep.ExecFile(l.Cmd, f)
		return nil
	})
}
