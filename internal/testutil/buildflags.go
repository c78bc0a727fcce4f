package testutil

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// BuildBinaryWith is BuildBinary with build flags, as go build takes
// them (such as "-ldflags=-X main.version=2.2.0"): the program is linked
// once per package and flags into the Go build cache and copied from
// there (goLink), so that a variant the tests build run after run costs
// a copy, not a link. Under make test-windows, whose binaries are built
// beforehand without flags, it returns an error.
func BuildBinaryWith(ctx context.Context, out, pkg string, flags ...string) (string, error) {
	if os.Getenv(PrebuiltEnv) != "" {
		return "", errors.New("BuildBinaryWith " + pkg + " " + strings.Join(flags, " ") + ": make test-windows builds the programs beforehand without flags; skip the test there")
	}
	if runtime.GOOS == "windows" && filepath.Ext(out) == "" {
		out += ".exe"
	}
	if err := goLink(ctx, nil, flags, out, pkg); err != nil {
		return "", fmt.Errorf("BuildBinaryWith: %w", err)
	}
	return out, nil
}
