package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
)

// Capabilities the sandbox needs (bit numbers, linux/capability.h).
const (
	capSetpcap  = 8
	capNetAdmin = 12
	capSysAdmin = 21
)

// Available says whether this process can run sandboxed plugins: it
// needs CAP_SYS_ADMIN (namespaces, mounts), CAP_NET_ADMIN (the loopback)
// and CAP_SETPCAP (dropping capabilities), which root has outside a
// container. The error says what is missing and what to do.
func Available() error {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return fmt.Errorf("sandbox: reading this process's capabilities: %w (is /proc mounted?)", err)
	}
	var eff uint64
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			eff, err = strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				return fmt.Errorf("sandbox: malformed CapEff line %q in /proc/self/status", line)
			}
		}
	}
	var missing []string
	for _, c := range []struct {
		bit  uint
		name string
	}{{capSysAdmin, "CAP_SYS_ADMIN"}, {capNetAdmin, "CAP_NET_ADMIN"}, {capSetpcap, "CAP_SETPCAP"}} {
		if eff&(1<<c.bit) == 0 {
			missing = append(missing, c.name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("sandbox: this process (uid %d) lacks %s, needed to make the plugin's namespaces and mounts: run the host as root (in a container: --privileged, or --cap-add SYS_ADMIN --cap-add NET_ADMIN --cap-add SETPCAP with seccomp allowing unshare and mount)",
			os.Geteuid(), strings.Join(missing, ", "))
	}
	return nil
}

// isolate makes cmd start in new mount, network and PID namespaces.
func isolate(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Cloneflags |= syscall.CLONE_NEWNS | syscall.CLONE_NEWNET | syscall.CLONE_NEWPID
}
