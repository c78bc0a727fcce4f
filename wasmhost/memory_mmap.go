//go:build linux || darwin

package wasmhost

import "golang.org/x/sys/unix"

// reserveMemory maps size bytes of anonymous memory, reserved without
// swap (MAP_NORESERVE): a page is resident once written. It returns an
// empty slice and no free func when the system refuses the mapping; the
// memory then grows in Go's heap.
func reserveMemory(size uint64) ([]byte, func()) {
	if size == 0 || size > 1<<40 {
		return nil, nil
	}
	b, err := unix.Mmap(-1, 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON|unix.MAP_NORESERVE)
	if err != nil {
		return nil, nil
	}
	return b[:0], func() { unix.Munmap(b) }
}
