package main

import (
	"fmt"
	"io"
	"os"
	"sort"
)

// command is one subcommand: run gets the arguments after the command's
// name and returns the process exit code.
type command struct {
	summary string
	run     func(args []string, stdout, stderr io.Writer) int
}

// commands is filled by the init functions of the subcommand files.
var commands = map[string]command{}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is the CLI with its conventions, the same for every subcommand:
// no arguments prints the usage on stderr and exits 2; "plugkit help CMD"
// is "plugkit CMD --help"; --help prints the usage on stdout and exits 0;
// an unknown subcommand is named as unknown.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	switch {
	case isHelp(args[0]):
		usage(stdout)
		return 0
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
