package rss

import (
	"fmt"
	"os"
	"strings"
	"time"
)

// Idle is how long the memory hosts let both sides sit before measuring.
const Idle = 300 * time.Millisecond

// Of returns the VmRSS of pid in KiB, or -1 when it cannot be read.
func Of(pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			var kib int64
			fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), &kib)
			return kib
		}
	}
	return -1
}
