//go:build !linux && !darwin

package wasmhost

// reserveMemory reserves nothing on this system: a guest's memory grows
// in Go's heap, by copying.
func reserveMemory(uint64) ([]byte, func()) { return nil, nil }
