package testutil

import (
	"bytes"
	"os"
	"strconv"
)

// tidyProcesses lists the running processes, other than this one, whose
// environment marks them as started under Main with the directory dir:
// all the processes the tests started and did not stop, whoever their
// parent is now (an orphan is re-parented, but keeps its environment).
// A process that cleared its environment is not seen.
func tidyProcesses(dir string) []process {
	mark := []byte(TidyEnv + "=" + dir + "\x00")
	self := os.Getpid()
	ents, _ := os.ReadDir("/proc")
	var out []process
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil || !bytes.Contains(append([]byte{0}, env...), append([]byte{0}, mark...)) || !Running(pid) {
			continue
		}
		cmdline, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		out = append(out, process{pid: pid, cmdline: string(bytes.TrimRight(bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}), " "))})
	}
	return out
}
