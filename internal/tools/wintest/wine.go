package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// mingwGCC is Debian's MinGW-w64 cross compiler for windows/amd64.
const mingwGCC = "x86_64-w64-mingw32-gcc"

// wine is a private Wine prefix with the ProcessPrng shim installed.
type wine struct {
	env []string // WINEPREFIX, WINEDEBUG
}

// newWine makes a Wine prefix in work/prefix, builds the shim into its
// system32 and starts a wineserver that stays up until stop.
func newWine(work string) (*wine, error) {
	prefix := filepath.Join(work, "prefix")
	w := &wine{env: []string{"WINEPREFIX=" + prefix, "WINEDEBUG=-all", "WINEDLLOVERRIDES=mscoree,mshtml="}}
	if err := os.MkdirAll(prefix, 0o700); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := runQuiet(command(ctx, work, w.env, "wineserver", "-p")); err != nil {
		return nil, fmt.Errorf("starting wineserver: %w", err)
	}
	if err := runQuiet(command(ctx, work, w.env, "wineboot", "-i")); err != nil {
		return nil, fmt.Errorf("making the Wine prefix: %w", err)
	}
	src, err := filepath.Abs(filepath.Join("internal", "tools", "wintest", "shim", "processprng.c"))
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(src); err != nil {
		return nil, fmt.Errorf("the shim's source: %w (run wintest from the repository's root, as make test-windows does)", err)
	}
	dll := filepath.Join(prefix, "drive_c", "windows", "system32", "bcryptprimitives.dll")
	if err := runQuiet(command(ctx, work, nil, mingwGCC, "-shared", "-O2", "-o", dll, src, "-ladvapi32")); err != nil {
		return nil, fmt.Errorf("building the ProcessPrng shim: %w", err)
	}
	return w, nil
}

// restart kills every process of the prefix (what a timed-out package
// left) and starts its wineserver again.
func (w *wine) restart() {
	w.stop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	command(ctx, "", w.env, "wineserver", "-p").Run()
}

// stop kills the prefix's processes and its wineserver.
func (w *wine) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	command(ctx, "", w.env, "wineserver", "-k").Run()
	command(ctx, "", w.env, "wineserver", "-w").Run()
}
