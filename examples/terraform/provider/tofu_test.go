//go:build tofu

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"
)

// tofuVersion is the OpenTofu release internal/tools/tofu pins; keep it
// equal to that go.mod's requirement and to TOFU_VERSION in the Makefile.
const tofuVersion = "v1.12.6"

// tofuBuildTimeout bounds a cold build of OpenTofu (a large program: a few
// minutes on two cores).
const tofuBuildTimeout = 20 * time.Minute

var (
	tofuOnce sync.Once
	tofuBin  string
	tofuErr  error
)

// tofuPath returns the OpenTofu binary: $PLUGKIT_TOFU when make test built
// it, else bin/tofu-VERSION at the repository root, built from the tools
// module when missing (so a plain go test works too; later runs reuse it).
func tofuPath() (string, error) {
	tofuOnce.Do(func() {
		if p := os.Getenv("PLUGKIT_TOFU"); p != "" {
			tofuBin = p
			if _, err := os.Stat(p); err != nil {
				tofuErr = fmt.Errorf("PLUGKIT_TOFU names %s: %v", p, err)
			}
			return
		}
		root, err := filepath.Abs(filepath.Join("..", "..", ".."))
		if err != nil {
			tofuErr = err
			return
		}
		tofuBin = filepath.Join(root, "bin", "tofu-"+tofuVersion)
		if _, err := os.Stat(tofuBin); err == nil {
			return
		}
		tofuErr = buildTofu(filepath.Join(root, "internal", "tools", "tofu"), tofuBin)
	})
	return tofuBin, tofuErr
}

// buildTofu builds OpenTofu from the tools module in dir into out, through
// a temporary name so that an interrupted build leaves nothing half-written.
func buildTofu(dir, out string) error {
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	tmp := fmt.Sprintf("%s.tmp%d", out, os.Getpid())
	defer os.Remove(tmp)
	ctx, cancel := context.WithTimeout(context.Background(), tofuBuildTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", tmp, "github.com/opentofu/opentofu/cmd/tofu")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=")
	if b, err := cmd.CombinedOutput(); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("go build of OpenTofu in %s took over %v (run `make tofu` once to build it outside the test timeout)", dir, tofuBuildTimeout)
		}
		return fmt.Errorf("go build of OpenTofu in %s: %v\n%s", dir, err, b)
	}
	return os.Rename(tmp, out)
}
