package trampoline

import (
	"errors"
	"os"
	"runtime"
	"syscall"
	"testing"
)

// TestOwnNamespaceIsTheThreads: a namespace the trampoline makes with
// unshare(2) on its locked thread is the one checkIsolated sees, also
// when that thread is not the process's first. Reading /proc/self/ns
// (the first thread's) instead made a sandboxed start fail under load
// with "shares its parent's cgroup namespace".
func TestOwnNamespaceIsTheThreads(t *testing.T) {
	before, err := os.Readlink("/proc/self/ns/cgroup")
	if err != nil {
		t.Skipf("no cgroup namespaces here: %v", err)
	}
	type result struct {
		own  string
		err  error
		skip string // why the test cannot run here
	}
	done := make(chan result, 1)
	work := func() {
		// The thread stays locked when this goroutine ends, so Go ends
		// it: the namespace made here leaves with it.
		runtime.LockOSThread()
		if err := syscall.Unshare(syscall.CLONE_NEWCGROUP); err != nil {
			if errors.Is(err, syscall.EPERM) {
				done <- result{skip: "unshare(CLONE_NEWCGROUP) needs CAP_SYS_ADMIN: run as root"}
				return
			}
			done <- result{err: err}
			return
		}
		own, err := ownNamespace("cgroup")
		done <- result{own: own, err: err}
	}
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if syscall.Gettid() != os.Getpid() {
			work()
			return
		}
		// This goroutine holds the first thread: the work gets another.
		inner := make(chan struct{})
		go func() {
			defer close(inner)
			work()
		}()
		<-inner
	}()
	r := <-done
	switch {
	case r.skip != "":
		t.Skip(r.skip)
	case r.err != nil:
		t.Fatal(r.err)
	case r.own == before:
		t.Errorf("ownNamespace(cgroup) = %s, the process's first thread's, after this thread made a cgroup namespace of its own", r.own)
	}
}
