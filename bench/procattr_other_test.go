//go:build !linux

package bench

import "os/exec"

// killWithParent does nothing: only Linux has a parent-death signal, so
// elsewhere a benchmark killed mid-way can leave its server running.
func killWithParent(*exec.Cmd) {}
