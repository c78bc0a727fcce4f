package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/plugkit/plugkit/handshake"
	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/hostwire"
)

// parseArgs parses flags that may come before, between or after the
// positional arguments (plugkit inspect PLUGIN --json), and returns the
// positional ones.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return positional, nil
		}
		if args[0] == "--" {
			return append(positional, args[1:]...), nil
		}
		positional = append(positional, args[0])
		args = args[1:]
	}
}

// newFlagSet returns a flag set that reports errors to stderr and does
// not exit.
func newFlagSet(name, usage string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: %s\n\nflags:\n", usage)
		fs.PrintDefaults()
	}
	return fs
}

// pluginFlags are the flags of every command that launches a plugin.
type pluginFlags struct {
	cookie   string
	versions string
	noMTLS   bool
	timeout  string
	remote   remoteFlags // --connect and its TLS flags (remote.go)
	// reattach is the --reattach configuration: a plugin in debug mode
	// (or any running plugin) to connect to instead of launching PLUGIN.
	reattach string
	// trustTCP is --trust-tcp-listener: a TCP --reattach whose listener
	// cannot be checked (any system but Linux) is let through.
	trustTCP bool
	// versionsSet is whether --versions was given.
	versionsSet bool
	// args are the words after "--": the launched plugin's arguments.
	args []string
	// guest is --wasm-cache, its bound and the grants, for a WebAssembly
	// plugin.
	guest guestFlags
	// module is set by start when the plugin is a WebAssembly module.
	module bool
}

func (p *pluginFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&p.cookie, "cookie", "", "the plugin's magic cookie, `KEY=VALUE` (required)")
	fs.StringVar(&p.versions, "versions", "1", "app protocol versions the host offers, a comma `list` such as 5,6")
	fs.BoolVar(&p.noMTLS, "no-mtls", false, "turn AutoMTLS off (for plugins that cannot do TLS)")
	fs.StringVar(&p.timeout, "timeout", "30s", "how long to wait for the plugin to start")
	p.remote.register(fs)
	p.guest.register(fs)
	fs.StringVar(&p.reattach, "reattach", "", "connect to a running plugin instead of launching one: the `JSON` (or the whole PLUGKIT_REATTACH='...' or TF_REATTACH_PROVIDERS='...' line) a plugin in debug mode prints; no PLUGIN, no --cookie; the plugin is left running")
	fs.BoolVar(&p.trustTCP, "trust-tcp-listener", false, "with a TCP --reattach, connect even where plugkit cannot check that the plugin is who listens on the address (every system but Linux, or a plugin on another machine): give it only for a plugin you started yourself, since whoever listens there gets the calls")
}

// parsed records which flags were given; call it after parsing fs.
func (p *pluginFlags) parsed(fs *flag.FlagSet) {
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "versions" {
			p.versionsSet = true
		}
	})
}

// explicitVersions returns --versions when it was given, else nil (the
// plugin's own versions are then offered).
func (p *pluginFlags) explicitVersions() ([]int, error) {
	if !p.versionsSet {
		return nil, nil
	}
	versions, err := handshake.ParseVersions(p.versions)
	if err == nil && len(versions) == 0 {
		err = fmt.Errorf("%q lists no version", p.versions)
	}
	return versions, err
}

// startTimeout parses --timeout, reporting a bad one itself.
func (p *pluginFlags) startTimeout(cmd string, stderr io.Writer) (time.Duration, bool) {
	timeout, err := time.ParseDuration(p.timeout)
	if err != nil || timeout <= 0 {
		fmt.Fprintf(stderr, "%s: --timeout %q: want a positive duration such as 30s\n", cmd, p.timeout)
		return 0, false
	}
	return timeout, true
}

// parse checks the flags and returns the cookie and versions.
func (p *pluginFlags) parse() (handshake.Cookie, []int, error) {
	if p.cookie == "" {
		return handshake.Cookie{}, nil, fmt.Errorf("--cookie KEY=VALUE is required: the plugin's documentation names its magic cookie (Terraform providers: TF_PLUGIN_MAGIC_COOKIE=d602bf8f...)")
	}
	cookie, err := handshake.ParseCookie(p.cookie)
	if err != nil {
		return cookie, nil, err
	}
	versions, err := handshake.ParseVersions(p.versions)
	if err != nil {
		return cookie, nil, fmt.Errorf("--versions: %w", err)
	}
	if len(versions) == 0 {
		return cookie, nil, fmt.Errorf("--versions %q lists no version", p.versions)
	}
	return cookie, versions, nil
}

// start launches the plugin at path as the flags say, logging its records
// to stderr when verbose: a WebAssembly module runs in a runtime of its
// own, as --wasm-cache and the grants say (guestRuntime). It reports
// failures itself, prefixed with cmd, and returns the exit code to use;
// stop closes the plugin, then its runtime.
func (p *pluginFlags) start(cmd, path string, verbose bool, stderr io.Writer) (client *host.Client, stop func(), code int) {
	if p.remote.set() && p.reattach != "" {
		fmt.Fprintf(stderr, "%s: --connect and --reattach both name the plugin: give one\n", cmd)
		return nil, nil, 2
	}
	if p.trustTCP && p.reattach == "" {
		fmt.Fprintf(stderr, "%s: --trust-tcp-listener applies to --reattach only: drop it, or give --reattach\n", cmd)
		return nil, nil, 2
	}
	if len(p.args) > 0 && (p.remote.set() || p.reattach != "") {
		fmt.Fprintf(stderr, "%s: the arguments after -- go to a plugin that plugkit launches; with --connect or --reattach the plugin is already running: drop them\n", cmd)
		return nil, nil, 2
	}
	p.module = !p.remote.set() && p.reattach == "" && hostwire.IsWasm(path)
	if p.guest.used() && !p.module {
		fmt.Fprintf(stderr, "%s: --wasm-cache, --wasm-cache-bytes, --grant and --grant-rw are for a WebAssembly plugin (a module that plugkit runs inside itself), and %s is not one: drop them\n", cmd, describePlugin(p, path))
		return nil, nil, 2
	}
	if err := p.guest.cache.check(); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", cmd, err)
		return nil, nil, 2
	}
	if p.remote.set() {
		timeout, ok := p.startTimeout(cmd, stderr)
		if !ok {
			return nil, nil, 2
		}
		versions, err := p.explicitVersions()
		if err != nil {
			fmt.Fprintf(stderr, "%s: --versions: %v\n", cmd, err)
			return nil, nil, 2
		}
		return closing(p.remote.dial(cmd, versions, timeout, verbose, stderr))
	}
	if p.reattach != "" {
		return closing(p.attach(cmd, verbose, stderr))
	}
	cookie, versions, err := p.parse()
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", cmd, err)
		return nil, nil, 2
	}
	timeout, ok := p.startTimeout(cmd, stderr)
	if !ok {
		return nil, nil, 2
	}
	opts := host.Options{Versions: versions, Logger: cliLogger(verbose, stderr)}
	if p.noMTLS {
		opts.Security = host.Plaintext()
	}
	hc := host.Command{
		Path:     path,
		Args:     p.args,
		Cookie:   cookie,
		Timeouts: host.Timeouts{Start: timeout},
	}
	closeRuntime := func() {}
	if p.module {
		guests := guestRuntime(p.guest.cache, p.guest.grants)
		hc.Runner = guests
		closeRuntime = func() { guests.Close(context.Background()) }
		if err := compileFirst(cmd, guests, path, p.guest.cache.dir, stderr); err != nil {
			closeRuntime()
			reportError(stderr, cmd, err)
			return nil, nil, 1
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout+10*time.Second)
	defer cancel()
	client, err = host.Start(ctx, hc, opts)
	if err != nil {
		closeRuntime()
		reportError(stderr, cmd, withPathHint(path, err))
		return nil, nil, 1
	}
	stop = sync.OnceFunc(func() {
		client.Close()
		closeRuntime()
	})
	track(stop)
	return client, stop, 0
}

// closing adds to a client and an exit code the stop function that
// closes the client.
func closing(client *host.Client, code int) (*host.Client, func(), int) {
	if client == nil {
		return nil, nil, code
	}
	return client, func() { client.Close() }, code
}

// describePlugin names what the flags p and path launch or reach, for an
// error message.
func describePlugin(p *pluginFlags, path string) string {
	switch {
	case p.remote.set():
		return "a service (--connect)"
	case p.reattach != "":
		return "a running plugin (--reattach)"
	}
	return path
}

// unprintable says whether safe escapes r: a control character, or a
// bidirectional control (unicode.Bidi_Control: the embeddings, overrides
// and isolates, and the marks U+200E, U+200F and U+061C).
func unprintable(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r)
}

// reportError prints err as one line of reason, followed by the plugin's
// last stderr lines when there are any, with control characters escaped.
func reportError(w io.Writer, prefix string, err error) {
	first, rest, _ := strings.Cut(err.Error(), "\n")
	fmt.Fprintf(w, "%s: %s\n", prefix, safe(first))
	if rest != "" {
		lines := strings.Split(rest, "\n")
		for i, l := range lines {
			lines[i] = safe(l)
		}
		fmt.Fprintln(w, strings.Join(lines, "\n"))
	}
}

// oneLine folds an error into a single line for a person to read, with
// control characters escaped.
func oneLine(err error) string {
	return safe(strings.Join(strings.Fields(err.Error()), " "))
}

// safe escapes the control characters in s (ANSI escape sequences, C1
// controls, carriage returns, tabs) and the bidirectional controls, so
// that text a plugin or a registry wrote (stderr lines, Describe answers,
// service names, file names) cannot clear the screen, move the cursor,
// forge lines and table cells, or show its characters in another order
// than they have (a name "fs" U+202E "gpj.exe" shown as "fsexe.jpg") in
// the CLI's output.
func safe(s string) string {
	if !strings.ContainsFunc(s, unprintable) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case !unprintable(r):
			b.WriteRune(r)
		case r < 0x80:
			fmt.Fprintf(&b, "\\x%02x", r)
		default:
			fmt.Fprintf(&b, "\\u%04x", r)
		}
	}
	return b.String()
}
