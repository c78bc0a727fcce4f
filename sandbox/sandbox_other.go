//go:build !linux

package sandbox

import (
	"fmt"
	"os/exec"
	"runtime"

	"github.com/plugkit/plugkit/host"

	"github.com/plugkit/plugkit/sandbox/internal/trampoline"
)

// Available reports that the sandbox needs Linux.
func Available() error {
	return errNotLinux()
}

func errNotLinux() error {
	return fmt.Errorf("sandbox: plugins can be sandboxed only on Linux (namespaces, Landlock, seccomp, cgroups), not on %s: leave host.Command.Runner nil to run the plugin unsandboxed, as the host's user", runtime.GOOS)
}

func (r Runner) plan() (plan, error) { return plan{}, errNotLinux() }

func isolate(*exec.Cmd, trampoline.Mode) {}

func hostNamespaces() (map[string]string, error) { return nil, errNotLinux() }

func (r Runner) enforcement(trampoline.Mode) (Enforcement, error) {
	return Enforcement{}, errNotLinux()
}

func (r Runner) applyLimits(*host.Launch, *trampoline.Spec, Enforcement) error { return errNotLinux() }
