package testutil

import "runtime"

// UsedMemory is the heap in use and the goroutine stacks after a
// collection: what a flood test compares before and after its load.
func UsedMemory() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc + m.StackInuse
}
