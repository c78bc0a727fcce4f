//go:build linux

package wasmhost

import (
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// snapshotFile is a snapshot's memory in a sealed memory file (memfd), which
// restore maps copy-on-write into a guest's memory: a start copies none
// of it, and a page the guest only reads stays shared with the page
// cache. nil when the system has no memfd.
func snapshotFile(snap *snapshot) *os.File {
	fd, err := unix.MemfdCreate("plugkit-snapshot", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil
	}
	f := os.NewFile(uintptr(fd), "plugkit-snapshot")
	if f.Truncate(int64(snap.size)) != nil {
		f.Close()
		return nil
	}
	for _, p := range snap.pages {
		if _, err := f.WriteAt(p.data, int64(p.off)); err != nil {
			f.Close()
			return nil
		}
	}
	// Sealed: nothing writes it, nothing changes its size, for as long as
	// guests map it.
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_WRITE|unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_SEAL); err != nil {
		f.Close()
		return nil
	}
	return f
}

// mapSnapshot maps f, privately (copy-on-write), over buf: the start of a
// guest's memory reserved by reserveMemory (never Go's heap), as long as
// f. It reports whether it did; buf is unchanged when it did not.
func mapSnapshot(f *os.File, buf []byte) bool {
	if len(buf) == 0 || uintptr(unsafe.Pointer(&buf[0]))%uintptr(os.Getpagesize()) != 0 {
		return false
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return false
	}
	ok := false
	// Control holds f open while it maps: a snapshot dropped meanwhile
	// closes it after.
	rc.Control(func(fd uintptr) {
		_, _, errno := unix.Syscall6(unix.SYS_MMAP, uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_FIXED, fd, 0)
		ok = errno == 0
	})
	return ok
}
