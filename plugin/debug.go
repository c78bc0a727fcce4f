package plugin

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/plugkit/plugkit/handshake"
	"github.com/plugkit/plugkit/internal/debugline"
)

// EnvDebug turns debug mode on when set to 1 (or true) in a plugin's
// environment. In debug mode the plugin is started by a person (under a
// debugger, for instance) rather than by its host: it serves without a
// host and without checking the cookie, prints one reattach line on
// standard output (see DebugLine) and serves until it is interrupted
// (SIGINT or SIGTERM) or a host asks it to shut down. A host connects to
// it with host.Reattach, `plugkit inspect --reattach`, or any go-plugin
// host through ClientConfig.Reattach.
const EnvDebug = "PLUGKIT_DEBUG"

// EnvReattach is the variable that debug mode's line sets:
// PLUGKIT_REATTACH='{"NAME":{...}}'.
const EnvReattach = "PLUGKIT_REATTACH"

// DebugLine writes debug mode's announcement: one line,
// NAME='{"plugin name":{...}}' where NAME is EnvReattach, with the JSON
// quoted for a POSIX shell, so that a person can paste it into a shell
// (or eval it) before running the host.
func DebugLine(w io.Writer, name string, r handshake.Reattach) error {
	text, err := handshake.ReattachJSON(name, r)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s=%s\n", EnvReattach, debugline.Quote(text))
	return err
}

// debugRequested reports whether debug mode is on: Config.Debug, or
// PLUGKIT_DEBUG set to a true value. Any other non-empty value of
// PLUGKIT_DEBUG is an error, so a typo does not start a plugin that then
// waits for a host that never comes.
func debugRequested(cfg Config, lookup func(string) (string, bool)) (bool, error) {
	if cfg.Debug {
		return true, nil
	}
	v, ok := lookup(EnvDebug)
	if !ok || v == "" {
		return false, nil
	}
	on, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("plugin: %s=%q: set it to 1 to serve in debug mode, or unset it", EnvDebug, v)
	}
	return on, nil
}

// readEnv reads the host's environment; in debug mode the cookie is not
// checked and the variables that only a launching host can honour
// (AutoMTLS's certificate, the broker multiplex question) are ignored,
// since a reattaching host knows nothing of them.
func readEnv(cfg Config, lookup func(string) (string, bool)) (handshake.Env, bool, error) {
	debug, err := debugRequested(cfg, lookup)
	if err != nil {
		return handshake.Env{}, false, err
	}
	if !debug {
		env, err := handshake.ReadEnv(lookup, cfg.Cookie)
		var ce *handshake.CookieError
		if errors.As(err, &ce) {
			return env, false, fmt.Errorf("%w. To run it under a debugger, set %s=1: it then serves until interrupted and prints a %s line for the host", err, EnvDebug, EnvReattach)
		}
		return env, false, err
	}
	debugLookup := func(key string) (string, bool) {
		switch key {
		case cfg.Cookie.Key:
			return cfg.Cookie.Value, true
		case handshake.EnvClientCert, handshake.EnvMultiplexGRPC:
			return "", false
		}
		return lookup(key)
	}
	env, err := handshake.ReadEnv(debugLookup, cfg.Cookie)
	return env, true, err
}

// announceDebug writes the reattach announcement for line to out.
func announceDebug(cfg Config, out io.Writer, line handshake.Line) error {
	name := cfg.Name
	if name == "" {
		name = filepath.Base(os.Args[0])
	}
	r := handshake.Reattach{
		Protocol:        line.Protocol,
		ProtocolVersion: line.AppVersion,
		Pid:             os.Getpid(),
		Test:            true,
		Addr:            handshake.ReattachAddr{Network: line.Network, String: line.Address},
	}
	announce := cfg.DebugAnnounce
	if announce == nil {
		announce = DebugLine
	}
	return announce(out, name, r)
}
