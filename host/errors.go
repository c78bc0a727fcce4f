package host

import (
	"fmt"
	"slices"
	"strings"
)

// ExitError reports a plugin whose process exited when nobody asked it
// to: before it finished starting (Start returns it), or, with InUse,
// while its host was using it, before Close or Kill: a crash, or an exit
// nobody asked for (Close returns it after cleaning up).
type ExitError struct {
	Name string
	// InUse is set for a plugin that had started and exited while its
	// host was using it; unset, it exited before its handshake.
	InUse bool
	// State is the process's exit status ("exit status 1", "signal: killed").
	State string
	// Stderr holds the last lines it wrote to standard error.
	Stderr []string
	// Cause is why it exited, when the Runner knows (Launch.Exited): a
	// sandbox's memory limit, for one. Unwrap returns it.
	Cause error
	// Panic is the Go panic the plugin died of, if it did; Unwrap
	// returns it too, so errors.As finds it.
	Panic *PanicError
}

// Unwrap returns Cause and Panic, those set.
func (e *ExitError) Unwrap() []error { return causes(e.Cause, e.Panic) }

// Error gives the exit status, its cause and the panic or the last
// stderr lines.
func (e *ExitError) Error() string {
	msg := fmt.Sprintf("plugin %s exited before its handshake (%s)", e.Name, e.State)
	if e.InUse {
		msg = fmt.Sprintf("plugin %s exited while its host was using it (%s)", e.Name, e.State)
	}
	if e.Cause != nil {
		msg += ": " + e.Cause.Error()
	}
	if e.Panic != nil {
		return msg + ": " + e.Panic.Error()
	}
	if !e.InUse && e.cookieRejected() {
		msg = fmt.Sprintf("plugin %s rejected the magic cookie and exited (%s): check the cookie the host sets (Command.Cookie, --cookie)", e.Name, e.State)
	}
	if len(e.Stderr) == 0 {
		return msg + " and wrote nothing to stderr"
	}
	return msg + "; its last stderr lines:\n  " + strings.Join(e.Stderr, "\n  ")
}

// cookieRejected recognises the message plugkit and go-plugin plugins
// print when started without their cookie.
func (e *ExitError) cookieRejected() bool {
	return slices.ContainsFunc(e.Stderr, isCookieNotice)
}

// StartError reports a plugin that could not be started or connected to
// for any other reason than exiting; Err says why.
type StartError struct {
	Name   string
	Err    error
	Stderr []string
}

// Error gives the cause and the last stderr lines.
func (e *StartError) Error() string {
	msg := fmt.Sprintf("plugin %s: %v", e.Name, e.Err)
	if len(e.Stderr) > 0 {
		msg += "; its last stderr lines:\n  " + strings.Join(e.Stderr, "\n  ")
	}
	return msg
}

// Unwrap returns the cause.
func (e *StartError) Unwrap() error { return e.Err }

// PanicError reports a Go plugin whose process died of a panic (or a
// fatal runtime error), as its standard error told: the panic's message
// and the panicking goroutine's stack, instead of the last raw lines. A
// plugin that only writes a "panic:" line and lives on is not reported
// as one: the process must have died with the Go runtime's exit status 2.
type PanicError struct {
	// Name is the plugin's name.
	Name string
	// Message is what the plugin panicked with ("runtime error: index out
	// of range [3] with length 2"), with any "[recovered]" chain.
	Message string
	// Stack is the panicking goroutine's stack, as the Go runtime printed
	// it, from its "goroutine N [running]:" line.
	Stack string
}

// Error gives the panic's message and its stack.
func (e *PanicError) Error() string {
	return fmt.Sprintf("plugin %s panicked: %s\n%s", e.Name, e.Message, e.Stack)
}

// causes lists the errors set among errs, for an Unwrap.
func causes(errs ...error) []error {
	var out []error
	for _, err := range errs {
		if err != nil && err != (*PanicError)(nil) {
			out = append(out, err)
		}
	}
	return out
}
