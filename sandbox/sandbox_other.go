//go:build !linux

package sandbox

import (
	"fmt"
	"os/exec"
	"runtime"
)

// Available reports that the sandbox needs Linux.
func Available() error {
	return fmt.Errorf("sandbox: plugins can be sandboxed only on Linux (namespaces and mounts), not on %s: leave host.Command.Runner nil to run the plugin unsandboxed", runtime.GOOS)
}

func isolate(*exec.Cmd) {}
