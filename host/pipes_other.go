//go:build !linux

package host

import "os"

// watchPipe has no poller here: each plugin's stdout is read by a
// goroutine of its own (Linux has one poller for all: pipes_linux.go).
func watchPipe(*os.File, []byte, *logSink, chan struct{}) (stop func(), ok bool) { return nil, false }
