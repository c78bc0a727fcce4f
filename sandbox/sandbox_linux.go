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
	capChown       = 0
	capDacOverride = 1
	capSetgid      = 6
	capSetuid      = 7
	capSetpcap     = 8
	capNetAdmin    = 12
	capSysAdmin    = 21
)

// Available says whether this process can run sandboxed plugins: it
// needs CAP_SYS_ADMIN (namespaces, mounts), CAP_NET_ADMIN (the loopback),
// CAP_SETPCAP (dropping capabilities), CAP_SETUID and CAP_SETGID (running
// the plugin as its own user), CAP_CHOWN (giving it the directories it
// writes) and CAP_DAC_OVERRIDE (reaching and removing the sockets it
// makes as that user), which root has outside a container. The error
// says what is missing and what to do.
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
	}{
		{capSysAdmin, "CAP_SYS_ADMIN"}, {capNetAdmin, "CAP_NET_ADMIN"}, {capSetpcap, "CAP_SETPCAP"},
		{capSetuid, "CAP_SETUID"}, {capSetgid, "CAP_SETGID"}, {capChown, "CAP_CHOWN"}, {capDacOverride, "CAP_DAC_OVERRIDE"},
	} {
		if eff&(1<<c.bit) == 0 {
			missing = append(missing, c.name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("sandbox: this process (uid %d) lacks %s, needed to make the plugin's namespaces and mounts: run the host as root (in a container: --privileged, or --cap-add SYS_ADMIN --cap-add NET_ADMIN with the default SETPCAP, SETUID, SETGID, CHOWN and DAC_OVERRIDE kept, and seccomp allowing unshare and mount)",
			os.Geteuid(), strings.Join(missing, ", "))
	}
	return nil
}

// isolate makes cmd start in new mount, network, PID, UTS (host name),
// IPC (System V and POSIX message queues, shared memory, semaphores) and
// cgroup namespaces.
func isolate(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Cloneflags |= syscall.CLONE_NEWNS | syscall.CLONE_NEWNET | syscall.CLONE_NEWPID |
		syscall.CLONE_NEWUTS | syscall.CLONE_NEWIPC | syscall.CLONE_NEWCGROUP
}
