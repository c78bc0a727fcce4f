package pluginharness

import (
	"context"
	"io"
)

// Harness is what a program running a plugin in-process replaces. The zero
// value replaces nothing: a real plugin's behaviour.
type Harness struct {
	// LookupEnv reads the environment; nil means os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// Handshake receives the handshake line; nil means standard output.
	// A service (plugin.EnvListen) prints no handshake; it writes the
	// address it listens on here, when set, as one line.
	Handshake io.Writer
	// KeepStdio leaves os.Stdout and os.Stderr alone. Otherwise, after the
	// handshake, they are redirected to the GRPCStdio stream, as go-plugin
	// does, so that stray prints cannot corrupt the protocol.
	KeepStdio bool
	// NoParentWatch turns off exiting when the parent process dies.
	NoParentWatch bool
}

type key struct{}

// With returns ctx carrying h, for plugin.Run.
func With(ctx context.Context, h Harness) context.Context {
	return context.WithValue(ctx, key{}, h)
}

// From returns the harness ctx carries; the zero Harness when none.
func From(ctx context.Context) Harness {
	h, _ := ctx.Value(key{}).(Harness)
	return h
}

// Lookup is h.LookupEnv, or lookupEnv when that is nil.
func (h Harness) Lookup(lookupEnv func(string) (string, bool)) func(string) (string, bool) {
	if h.LookupEnv != nil {
		return h.LookupEnv
	}
	return lookupEnv
}
