package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/plugkit/plugkit/handshake"
	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/manager"
	"github.com/plugkit/plugkit/wasmhost"
)

func init() {
	commands["plugins"] = command{
		summary: "list the plugin binaries in a directory (list), describe one (describe), or keep them running and upgrade them as new ones are installed (watch)",
		run:     runPlugins,
	}
}

// binaryReport is one binary in `plugins list --json`.
type binaryReport struct {
	Path          string       `json:"path"`
	OK            bool         `json:"ok"`
	Error         string       `json:"error,omitempty"`
	PluginVersion string       `json:"plugin_version,omitempty"`
	SDKVersion    string       `json:"sdk_version,omitempty"`
	SHA256        string       `json:"sha256,omitempty"`
	Cached        bool         `json:"cached"`
	Kinds         []kindReport `json:"kinds,omitempty"`
}

type kindReport struct {
	Kind         string   `json:"kind"`
	Major        int      `json:"major"`
	Minor        int      `json:"minor"`
	Service      string   `json:"service"`
	Capabilities []string `json:"capabilities"`
	Names        []string `json:"names"`
}

func report(b manager.Entry) binaryReport {
	r := binaryReport{Path: b.Location.String(), OK: b.Err == nil, SHA256: b.SHA256, Cached: b.Cached}
	if b.Err != nil {
		r.Error = oneLine(b.Err)
		return r
	}
	r.PluginVersion, r.SDKVersion = b.Description.GetPluginVersion(), b.Description.GetSdkVersion()
	for _, k := range b.Description.GetKinds() {
		for _, m := range k.GetMajors() {
			r.Kinds = append(r.Kinds, kindReport{Kind: k.GetName(), Major: int(m.GetMajor()), Minor: int(m.GetMinor()),
				Service: m.GetService(), Capabilities: nonNil(m.GetCapabilities()), Names: nonNil(m.GetNames())})
		}
	}
	return r
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// printTable writes binaries as a table: one row per (binary, kind, major).
func printTable(w io.Writer, bins []manager.Entry) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "BINARY\tVERSION\tKIND\tMAJOR.MINOR\tCAPABILITIES\tNAMES")
	for _, b := range bins {
		r := report(b)
		name := safe(filepath.Base(b.Location.String()))
		if !r.OK {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\tunusable: %s\n", name, safe(r.Error))
			continue
		}
		for _, k := range r.Kinds {
			caps := strings.Join(k.Capabilities, ",")
			if caps == "" {
				caps = "-"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d.%d\t%s\t%s\n", name, safe(r.PluginVersion), safe(k.Kind), k.Major, k.Minor, safe(caps), safe(strings.Join(k.Names, ",")))
		}
	}
	tw.Flush()
}

const pluginsUsage = "plugkit plugins list --dir DIR [--dir DIR...] --cookie KEY=VALUE [--names PATTERN] [--json]\n       plugkit plugins list --connect HOST:PORT --tls-ca F --tls-cert F --tls-key F [--json]\n       plugkit plugins describe BINARY --cookie KEY=VALUE [--json]\n       " + pluginsWatchSynopsis + "\n\nlist exits 0 when at least one binary is usable, 1 when none is or the directories hold none (a line on stderr says where it looked); describe exits 1 when the binary is unusable\n\nlist runs only the files of a directory that identify as plugins: those named as --names says (default " + defaultNames + "), and Go programs that link plugkit's module (read from their build info, without running them); --names '*' runs every executable, as Dirs without Finder.Names does. A plugin file that others may write, set-user-ID, or owned by another user than yours or root is refused before it runs.\n\n" + pluginsWatchAbout

// defaultNames is the CLI's default --names: a directory such as /bin
// holds no file of that name, so its programs are never run to ask what
// they are.
const defaultNames = "plugkit-*"

// pluginsFlags are the flags of plugins list and describe.
type pluginsFlags struct {
	sub       string // list or describe
	dirs      multiFlag
	cookie    string
	asJSON    bool
	cacheFile string
	// cacheBytes is --wasm-cache-bytes: the bound of the compiled
	// WebAssembly plugins kept beside cacheFile (wasmCacheDir).
	cacheBytes int64
	names      string
	remote     remoteFlags
	watched    watchFlags // plugins watch's
}

func (p *pluginsFlags) register(fs *flag.FlagSet) {
	if p.sub != "describe" {
		fs.Var(&p.dirs, "dir", "a plugin `directory` (repeatable; earlier ones win duplicate names)")
		fs.StringVar(&p.names, "names", defaultNames, "the `PATTERN` (filepath.Match) of the file names in --dir that are plugins; Go programs that link plugkit are plugins whatever their name; '*' runs every executable")
	}
	fs.StringVar(&p.cookie, "cookie", "", "the plugins' magic cookie, `KEY=VALUE` (required; the plugins' documentation names it)")
	fs.BoolVar(&p.asJSON, "json", false, "print JSON")
	fs.StringVar(&p.cacheFile, "cache", "", "a `file` that caches Describe answers between runs (and, in FILE.wasm, the compiled WebAssembly plugins)")
	fs.Int64Var(&p.cacheBytes, "wasm-cache-bytes", 0, "the most `bytes` of compiled WebAssembly plugins kept in --cache's FILE.wasm, "+cacheBoundUsage)
	switch p.sub {
	case "list":
		p.remote.register(fs)
	case "watch":
		p.watched.register(fs)
	}
}

func runPlugins(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintf(stderr, "usage: %s\n", pluginsUsage)
		return 2
	}
	if args[0] != "list" && args[0] != "describe" && args[0] != "watch" {
		if isHelp(args[0]) {
			fmt.Fprintf(stderr, "usage: %s\n", pluginsUsage)
			return 0
		}
		fmt.Fprintf(stderr, "plugkit plugins: unknown subcommand %q (want list, describe or watch)\nusage: %s\n", args[0], pluginsUsage)
		return 2
	}
	p := &pluginsFlags{sub: args[0]}
	fs := newFlagSet("plugins "+p.sub, pluginsUsage, stderr)
	p.register(fs)
	pos, err := parseArgs(fs, args[1:])
	if err != nil {
		return 2
	}
	if p.remote.set() {
		if len(p.dirs) != 0 || len(pos) != 0 {
			fmt.Fprintf(stderr, "plugkit plugins list: --connect replaces --dir: give one or the other\nusage: %s\n", pluginsUsage)
			return 2
		}
		b, code := describeRemote(&p.remote, stderr)
		if code != 0 {
			return code
		}
		return p.printOne(stdout, b)
	}
	if p.cookie == "" {
		fmt.Fprintf(stderr, "plugkit plugins %s: --cookie KEY=VALUE is required: plugins answer only a host that sets their magic cookie (the MagicCookieKey and MagicCookieValue of the plugin's HandshakeConfig, as its kind's documentation gives them)\nusage: %s\n", p.sub, pluginsUsage)
		return 2
	}
	cookie, err := handshake.ParseCookie(p.cookie)
	if err != nil {
		fmt.Fprintf(stderr, "plugkit plugins: --cookie: %v\n", err)
		return 2
	}
	if p.cacheBytes != 0 && p.cacheFile == "" {
		fmt.Fprintf(stderr, "plugkit plugins %s: --wasm-cache-bytes %d bounds the compiled WebAssembly plugins kept beside --cache, and no --cache names a file: give --cache FILE, or drop --wasm-cache-bytes\n", p.sub, p.cacheBytes)
		return 2
	}
	if p.sub == "describe" {
		return p.describe(pos, cookie, stdout, stderr)
	}
	if len(p.dirs) == 0 || len(pos) != 0 {
		fmt.Fprintf(stderr, "plugkit plugins %s: name the plugin directories with --dir\nusage: %s\n", p.sub, pluginsUsage)
		return 2
	}
	if p.sub == "watch" {
		return p.watch(cookie, stdout, stderr)
	}
	return p.list(cookie, stdout, stderr)
}

// manager returns a manager of the directories, and the Finder that
// launches and describes their binaries (and the one binary of
// describe), stopped when the command ends or is interrupted.
// WebAssembly plugins run in a wasmhost runtime, their compiled form
// kept beside the cache file when there is one.
func (p *pluginsFlags) manager(cookie handshake.Cookie, stderr io.Writer, configure ...func(*manager.Config)) (*manager.Manager, *manager.Finder) {
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelError + 1}))
	guests := wasmhost.New(wasmhost.Config{CacheDir: wasmCacheDir(p.cacheFile), CacheBytes: p.cacheBytes})
	finder := &manager.Finder{
		CacheFile: p.cacheFile,
		Launch:    host.Command{Cookie: cookie},
		Host:      host.Options{Logger: logger},
		Guests:    guests,
		Names:     p.names,
	}
	var sources []manager.Source
	if len(p.dirs) > 0 {
		sources = []manager.Source{finder.Dirs(p.dirs...)}
	}
	cfg := manager.Config{Sources: sources, Logger: logger}
	for _, c := range configure {
		c(&cfg)
	}
	m := manager.New(cfg)
	track(func() {
		m.Close()
		guests.Close(context.Background())
	})
	return m, finder
}

// wasmCacheDir is where the compiled WebAssembly plugins of a manager
// with cacheFile are kept: beside it, or nowhere without it.
func wasmCacheDir(cacheFile string) string {
	if cacheFile == "" {
		return ""
	}
	return cacheFile + ".wasm"
}

// printOne prints one binary and returns describe's exit code for it.
func (p *pluginsFlags) printOne(stdout io.Writer, b manager.Entry) int {
	if p.asJSON {
		json.NewEncoder(stdout).Encode(report(b))
	} else {
		printTable(stdout, []manager.Entry{b})
	}
	if b.Err != nil {
		return 1
	}
	return 0
}

// describe is plugins describe BINARY.
func (p *pluginsFlags) describe(pos []string, cookie handshake.Cookie, stdout, stderr io.Writer) int {
	if len(pos) != 1 {
		fmt.Fprintf(stderr, "plugkit plugins describe: want one binary path\nusage: %s\n", pluginsUsage)
		return 2
	}
	abs, err := filepath.Abs(pos[0])
	if err == nil {
		_, err = os.Stat(abs)
	}
	if err != nil {
		fmt.Fprintf(stderr, "plugkit plugins describe: %v\n", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m, finder := p.manager(cookie, stderr)
	defer m.Close()
	return p.printOne(stdout, finder.Describe(ctx, []string{abs})[0])
}

// list is plugins list --dir DIR...
func (p *pluginsFlags) list(cookie handshake.Cookie, stdout, stderr io.Writer) int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m, _ := p.manager(cookie, stderr)
	defer m.Close()
	if err := m.Discover(ctx); err != nil {
		fmt.Fprintf(stderr, "plugkit plugins list: %s\n", oneLine(err))
		return 1
	}
	bins := m.Entries()
	code := listExitCode(bins, p.dirs, p.names, stderr)
	if p.asJSON {
		out := struct {
			Binaries []binaryReport `json:"binaries"`
			Problems []string       `json:"problems"`
		}{Binaries: []binaryReport{}, Problems: nonNil(m.Problems())}
		for _, b := range bins {
			out.Binaries = append(out.Binaries, report(b))
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.Encode(out)
		return code
	}
	if len(bins) > 0 {
		printTable(stdout, bins)
	}
	for _, p := range m.Problems() {
		fmt.Fprintf(stdout, "problem: %s\n", safe(p))
	}
	return code
}

// listExitCode is the exit code of plugins list: 0 when at least one
// binary is usable, 1 (with a line on stderr saying where it looked)
// when none is or when the directories hold no binary at all.
func listExitCode(bins []manager.Entry, dirs []string, names string, stderr io.Writer) int {
	usable := 0
	for _, b := range bins {
		if b.Err == nil {
			usable++
		}
	}
	where := safe(strings.Join(dirs, ", "))
	switch {
	case usable > 0:
		return 0
	case len(bins) == 0:
		fmt.Fprintf(stderr, "plugkit plugins list: no plugin binary in %s (only files named %s and Go programs that link plugkit are plugins; nothing else was run): put plugin executables there, name them to match --names, or name another directory with --dir\n", where, safe(names))
	default:
		fmt.Fprintf(stderr, "plugkit plugins list: none of the %d binaries in %s is usable (the list gives each one's reason): fix or replace them, or check --cookie\n", len(bins), where)
	}
	return 1
}

// multiFlag is a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }
