package testutil

import (
	"bytes"
	"os"
	"strconv"
)

// Running reports whether process pid runs: /proc knows it and it is not a
// zombie (or dead) waiting to be reaped, as an orphan may be for a while
// after it exits, or forever when its new parent never reaps it.
func Running(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the command name, which is in parentheses and may
	// itself hold any byte.
	i := bytes.LastIndexByte(stat, ')')
	return i < 0 || i+2 >= len(stat) || (stat[i+2] != 'Z' && stat[i+2] != 'X')
}
