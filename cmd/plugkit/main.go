package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
)

// command is one subcommand: run gets the arguments after the command's
// name and returns the process exit code.
type command struct {
	summary string
	run     func(args []string, stdout, stderr io.Writer) int
	// plain marks a command that starts no plugins. The CLI installs no
	// interrupt handler for it: a signal stops it as it stops any Go
	// program (and as it stops plugkit-proto), and the process starts
	// without the handler's goroutine and the OS thread that waits for
	// signals, which matter to commands run once per file or per pair.
	plain bool
}

// commands is filled by the init functions of the subcommand files.
var commands = map[string]command{}

func main() {
	if handlesInterrupts(os.Args[1:]) {
		go stopOnSignal()
	}
	code := run(os.Args[1:], os.Stdout, os.Stderr)
	if interrupted.Load() {
		// The command failed because the signal handler is closing its
		// plugins: the handler exits, with the signal's status.
		select {}
	}
	os.Exit(code)
}

// interrupted is set as soon as a signal arrives.
var interrupted atomic.Bool

// live holds what stops the plugins the CLI has started and not yet
// closed, so that an interrupt closes them politely.
var live struct {
	sync.Mutex
	next    int
	closers map[int]func()
}

// track registers close as the way to stop a started plugin (or manager)
// on an interrupt. close must be safe to call again after the command's
// own Close, as host.Client.Close and manager.Manager.Close are.
func track(close func()) {
	live.Lock()
	defer live.Unlock()
	if live.closers == nil {
		live.closers = map[int]func(){}
	}
	live.closers[live.next] = close
	live.next++
}

// handlesInterrupts reports whether the command args name may start
// plugins, so that an interrupt must close them: every command but the
// plain ones.
func handlesInterrupts(args []string) bool {
	if len(args) == 0 {
		return true
	}
	cmd, ok := commands[args[0]]
	return !ok || !cmd.plain
}

// stopOnSignal waits for Ctrl-C (SIGINT) or SIGTERM, closes every plugin
// the CLI started (the Shutdown RPC, then the staged stop) and exits with
// the shell's status for the signal: 130 or 143.
func stopOnSignal() {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	sig := <-ch
	interrupted.Store(true)
	signal.Stop(ch) // a second Ctrl-C kills the CLI at once
	live.Lock()
	closers := make([]func(), 0, len(live.closers))
	for _, c := range live.closers {
		closers = append(closers, c)
	}
	live.Unlock()
	var wg sync.WaitGroup
	for _, c := range closers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c()
		}()
	}
	wg.Wait()
	code := 130
	if sig == syscall.SIGTERM {
		code = 143
	}
	os.Exit(code)
}

// run is the CLI with its conventions, the same for every subcommand:
// no arguments prints the usage on stderr and exits 2; "plugkit help CMD"
// is "plugkit CMD --help"; --help prints the usage on stdout and exits 0;
// an unknown subcommand is named as unknown; --version is "plugkit version".
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	switch {
	case isHelp(args[0]):
		usage(stdout)
		return 0
	case args[0] == "--version" || args[0] == "-version":
		return run(append([]string{"version"}, args[1:]...), stdout, stderr)
	case args[0] == "help":
		if len(args) == 1 {
			usage(stdout)
			return 0
		}
		if _, ok := commands[args[1]]; !ok {
			fmt.Fprintf(stderr, "plugkit help: unknown command %q; run \"plugkit help\" for the list\n", args[1])
			return 2
		}
		return run(append([]string{args[1], "--help"}, args[2:]...), stdout, stderr)
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "plugkit: unknown command %q; run \"plugkit help\" for the list\n", args[0])
		return 2
	}
	if wantsHelp(args[1:]) {
		// A command prints its usage on its error stream when its flags
		// are wrong; asked for help, that usage is the answer: it goes to
		// stdout and the exit status is 0.
		if code := cmd.run(args[1:], stdout, stdout); code != 2 {
			return code
		}
		return 0
	}
	return cmd.run(args[1:], stdout, stderr)
}

// isHelp reports whether arg asks for help.
func isHelp(arg string) bool {
	return arg == "-h" || arg == "-help" || arg == "--help"
}

// wantsHelp reports whether args ask for help before any "--".
func wantsHelp(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if isHelp(a) {
			return true
		}
	}
	return false
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: plugkit COMMAND [flags] [args]")
	fmt.Fprintln(w, "\ncommands:")
	names := make([]string, 0, len(commands))
	for name := range commands {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		fmt.Fprintf(w, "  %-10s %s\n", name, commands[name].summary)
	}
}
