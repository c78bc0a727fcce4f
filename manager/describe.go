package manager

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"go.opentelemetry.io/otel/attribute"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/plugkit/plugkit/describe"
	catalogv1 "github.com/plugkit/plugkit/gen/plugkit/catalog/v1"
	"github.com/plugkit/plugkit/host"
)

// describe stats, hashes (when the cache cannot vouch for the file),
// checks the pin, and launches the binary for Describe when needed.
func (f *Finder) describe(ctx context.Context, path string, run *describeRun) *Entry {
	v := &fileValue{}
	b := &Entry{Location: Location{Origin: OriginDir, Path: path}, Value: v}
	fi, err := os.Stat(path)
	if err != nil {
		b.Err = statError(path, err)
		return b
	}
	b.Size, b.ModTime = fi.Size(), fi.ModTime()
	if !fi.Mode().IsRegular() {
		b.Err = fmt.Errorf("not a regular file (%s): only plugin binaries belong in a plugin directory; move it out", fileType(fi.Mode()))
		return b
	}
	if b.Err = unsafeFile(path, fi); b.Err != nil {
		return b
	}
	if v.wasm, err = f.runnable(path, fi.Mode()); err != nil {
		b.Err = err
		return b
	}
	// A cached checksum stands in for hashing only when nothing is
	// pinned: a same-size swap with the mtime restored must not pass a
	// pin check on the cache's word. (Within one Discover, paths to the
	// same inode, size and mtime share one hash, pinned or not.)
	_, pinned := f.pin(path)
	if ce := run.cache[path]; !pinned && ce != nil && ce.Size == b.Size && ce.ModTime == b.ModTime.UnixNano() {
		b.SHA256 = ce.SHA256
	} else if b.SHA256, err = run.hashes.sum(ctx, path, fi); err != nil {
		b.Err = err
		return b
	}
	if err := f.checkPin(path, b.SHA256); err != nil {
		f.report(host.Event{Type: host.EventPinRefused, Binary: path, Plugin: filepath.Base(path), Cause: err})
		b.Err = err
		return b
	}
	if ce := run.cache[path]; ce != nil && ce.SHA256 == b.SHA256 && len(ce.Describe) > 0 {
		d := &catalogv1.DescribeResponse{}
		if protojson.Unmarshal(ce.Describe, d) == nil && describe.Check(d) == nil {
			b.Description, b.Cached = d, true
			return b
		}
	}
	select {
	case run.launch <- struct{}{}:
		defer func() { <-run.launch }()
	case <-ctx.Done():
		b.Err = ctx.Err()
		return b
	}
	if err := f.compileGuest(ctx, path, v.wasm); err != nil { // outside DescribeTimeout
		b.Err = err
		return b
	}
	if f.launched != nil {
		f.launched(path)
	}
	var c *host.Client
	b.Description, c, b.Err = f.launchDescribe(ctx, path, func(ctx context.Context, tel host.Telemetry) (*catalogv1.DescribeResponse, *host.Client, error) {
		return f.startDescribe(ctx, path, v.wasm, tel, b.SHA256)
	})
	if ce, ok := changedSince(b.Err, b.SHA256); ok {
		f.forget(path)
		b.Err = fmt.Errorf("the file changed after Discover found its SHA-256 %s (hashed, or from the cache), before its launch to describe it: it is now %s, so it was not run (what is described must be what was hashed); run Discover again once the file is in place", ce.Want, ce.Got)
	}
	if c != nil {
		v.c.Store(c)
	}
	return b
}

// startDescribe launches the binary at path for its description. Unless
// the process is to be kept (KeepDescribed), a plugkit catalog
// plugin, native or WebAssembly, is asked for its description alone
// (describe.Start: no key pair, listener or gRPC; it exits once it
// has written it); any other plugin, and a kept one, is started and
// returns its Client, for Describe over gRPC. wasm says the file is a
// WebAssembly module (runnable); tel is its telemetry
// (describeTelemetry); sum is the file's SHA-256, which the file it
// executes must have (checked on that open file, so that the description
// and a kept process are those of the bytes hashed).
func (f *Finder) startDescribe(ctx context.Context, path string, wasm bool, tel host.Telemetry, sum string) (*catalogv1.DescribeResponse, *host.Client, error) {
	if f.KeepDescribed {
		c, err := f.start(ctx, path, tel, wasm, sum)
		return nil, c, err
	}
	cmd, opts := f.hostConfig(path, wasm)
	cmd.SHA256 = cmp.Or(cmd.SHA256, sum)
	opts.Telemetry = tel
	d, c, err := describe.Start(ctx, cmd, opts)
	f.countLaunch(err)
	return d, c, err
}

// launchDescribe starts a plugin (start) and asks it for its
// description, within DescribeTimeout. The process is then stopped, or
// returned for the plugin's first use (KeepDescribed); where names the
// plugin for its span. start, given the telemetry of the launch
// (describeTelemetry), may return the description itself (the plugin
// wrote it and exited) instead of a Client.
func (f *Finder) launchDescribe(ctx context.Context, where string, start func(context.Context, host.Telemetry) (*catalogv1.DescribeResponse, *host.Client, error)) (d *catalogv1.DescribeResponse, kept *host.Client, err error) {
	ctx, cancel := context.WithTimeout(ctx, cmp.Or(f.DescribeTimeout, describe.DefaultTimeout))
	defer cancel()
	ctx, end := span(ctx, f.Host.Telemetry, "plugkit.describe", attribute.String("plugkit.binary", where))
	defer func() { end(err) }()
	tel, described := f.describeTelemetry()
	d, c, err := start(ctx, tel)
	if err != nil || c == nil {
		return d, nil, err // described without serving (startDescribe), or failed
	}
	d, err = describe.Conn(ctx, c.Conn())
	if err != nil || !f.KeepDescribed {
		c.Close()
		return d, nil, err
	}
	described(d.GetPluginVersion())
	return d, c, nil
}

// statError explains why a plugin directory's entry cannot be looked at:
// a symbolic link that loops or leads nowhere, or a file this user may not
// read, with what to do about it.
func statError(path string, err error) error {
	if li, lerr := os.Lstat(path); lerr == nil && li.Mode()&fs.ModeSymlink != 0 {
		target, _ := os.Readlink(path)
		return fmt.Errorf("a symbolic link (to %q) that leads to no usable file: %w; point it at the plugin binary, or remove it", target, err)
	}
	if errors.Is(err, fs.ErrPermission) {
		user := "this user"
		if uid := os.Geteuid(); uid >= 0 { // -1 on Windows
			user = fmt.Sprintf("this user (uid %d)", uid)
		}
		return fmt.Errorf("%w: %s may not read it; fix its permissions, or move it out of the plugin directory", err, user)
	}
	return err
}

// fileType names what a non-regular file is, for errors.
func fileType(mode fs.FileMode) string {
	switch {
	case mode.IsDir():
		return "a directory"
	case mode&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case mode&fs.ModeSocket != 0:
		return "a socket"
	case mode&fs.ModeDevice != 0:
		return "a device"
	}
	return "mode " + mode.String()
}
