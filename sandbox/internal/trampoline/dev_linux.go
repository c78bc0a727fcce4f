package trampoline

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
)

// devices are the device files of the sandbox's /dev, bound from the
// host's: what programs expect to find, and nothing that reaches the
// hardware, the kernel's log (/dev/kmsg) or a terminal (/dev/tty: the
// plugin has no controlling terminal).
var devices = []string{"full", "null", "random", "urandom", "zero"}

// devLinks are the symbolic links of the sandbox's /dev.
var devLinks = map[string]string{
	"fd":     "/proc/self/fd",
	"stdin":  "/proc/self/fd/0",
	"stdout": "/proc/self/fd/1",
	"stderr": "/proc/self/fd/2",
}

// maskedFiles are the files of /proc that leak the kernel's memory, keys,
// timers and scheduler to the plugin, or act on the machine
// (sysrq-trigger); those that exist are covered with /dev/null, as
// container runtimes do.
var maskedFiles = []string{
	"/proc/kcore", "/proc/keys", "/proc/latency_stats", "/proc/sched_debug",
	"/proc/sysrq-trigger", "/proc/timer_list", "/proc/timer_stats",
}

// maskedDirs are the directories of /proc and /sys that describe or act
// on the hardware and firmware; those that exist are covered with an
// empty read-only tmpfs.
var maskedDirs = []string{
	"/proc/acpi", "/proc/asound", "/proc/scsi",
	"/sys/firmware", "/sys/devices/virtual/powercap",
}

// readOnlyDirs are the directories of /proc whose files set the kernel's
// parameters (/proc/sys: core_pattern, hostname, drop_caches, ...); those
// that exist are bound onto themselves read-only, for a plugin that could
// write them as its user.
var readOnlyDirs = []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys"}

// openDevices opens the host's devices of devices, before the sandbox's
// /dev hides them.
func openDevices() ([]int, error) {
	fds := make([]int, len(devices))
	for i, name := range devices {
		fd, err := syscall.Open("/dev/"+name, oPath|syscall.O_CLOEXEC, 0)
		if err != nil {
			return nil, fmt.Errorf("opening the host's /dev/%s: %w", name, err)
		}
		fds[i] = fd
	}
	return fds, nil
}

// mountDev replaces /dev with a tmpfs that holds the devices (open in
// devs, in the order of devices), bound from the host's, and the links of
// devLinks, then makes the tmpfs read-only.
func mountDev(devs []int) error {
	if err := syscall.Mount("tmpfs", "/dev", "tmpfs", syscall.MS_NOSUID|syscall.MS_NOEXEC, "mode=0755,size=64k"); err != nil {
		return err
	}
	for i, name := range devices {
		path := "/dev/" + name
		f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o666)
		if err != nil {
			return err
		}
		f.Close()
		if err := syscall.Mount("/proc/self/fd/"+strconv.Itoa(devs[i]), path, "", syscall.MS_BIND, ""); err != nil {
			return fmt.Errorf("binding %s: %w", path, err)
		}
		syscall.Close(devs[i])
	}
	for name, target := range devLinks {
		if err := os.Symlink(target, "/dev/"+name); err != nil {
			return err
		}
	}
	return setReadOnly("/dev", true, false)
}

// maskKernelFiles covers the files of maskedFiles and the directories of
// maskedDirs, and makes readOnlyDirs read-only, where they exist, in the
// sandbox's fresh /proc and /sys.
func maskKernelFiles() error {
	dirs, err := existing(readOnlyDirs)
	if err != nil {
		return err
	}
	for _, path := range dirs {
		if err := syscall.Mount(path, path, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
			return fmt.Errorf("binding %s onto itself: %w", path, err)
		}
		if err := setReadOnly(path, true, true); err != nil {
			return fmt.Errorf("making %s read-only: %w", path, err)
		}
	}
	files, err := existing(maskedFiles)
	if err != nil {
		return err
	}
	for _, path := range files {
		if err := syscall.Mount("/dev/null", path, "", syscall.MS_BIND, ""); err != nil {
			return fmt.Errorf("masking %s: %w", path, err)
		}
	}
	if dirs, err = existing(maskedDirs); err != nil {
		return err
	}
	for _, path := range dirs {
		if err := syscall.Mount("tmpfs", path, "tmpfs", syscall.MS_RDONLY|syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, "size=0,mode=0555"); err != nil {
			return fmt.Errorf("masking %s: %w", path, err)
		}
	}
	return nil
}

// existing returns the paths that exist: a missing one is no error (the
// kernel builds some of these files only with some options).
func existing(paths []string) ([]string, error) {
	var out []string
	for _, path := range paths {
		_, err := os.Lstat(path)
		switch {
		case err == nil:
			out = append(out, path)
		case !errors.Is(err, os.ErrNotExist):
			return nil, fmt.Errorf("looking for %s: %w", path, err)
		}
	}
	return out, nil
}
