package protocli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/plugkit/plugkit/protocheck"
	"github.com/plugkit/plugkit/protocheck/load"
	"github.com/plugkit/plugkit/protocheck/report"
	"github.com/plugkit/plugkit/protocheck/ruleset"
)

// Exit codes of "plugkit proto", as buf's.
const (
	exitOK       = 0
	exitFailure  = 1
	exitFindings = 100
)

// listFlag collects a repeatable, comma-separated flag.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(s string) error {
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			*l = append(*l, p)
		}
	}
	return nil
}

// pathFlag collects a repeatable flag without splitting on commas.
type pathFlag []string

func (l *pathFlag) String() string     { return strings.Join(*l, string(rune(0))) }
func (l *pathFlag) Set(s string) error { *l = append(*l, s); return nil }

// parseInterleaved parses flags that may come before or after positional
// arguments, as buf allows ("breaking DIR --against X").
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if rest[0] == "--" {
			return append(pos, rest[1:]...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// Run runs the proto command line: args are what follows "proto" ("breaking
// INPUT --against AGAINST ...", "history DIR", "rules"). It returns the exit
// status: 0 no findings, 100 breaking findings, 1 failure, 2 usage error.
// Name is the command's name for messages, e.g. "plugkit proto".
func Run(name string, args []string, stdout, stderr io.Writer) int {
	usage := strings.ReplaceAll(Usage, "plugkit proto", name)
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	if isHelp(args[0]) || args[0] == "help" {
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	switch args[0] {
	case "breaking":
		return runProtoBreaking(args[1:], stdout, stderr)
	case "history":
		return runProtoHistory(args[1:], stdout, stderr)
	case "rules":
		return runProtoRules(args[1:], stdout, stderr)
	}
	fmt.Fprintf(stderr, "%s: unknown subcommand %q (use breaking, history or rules)\n", name, args[0])
	return 2
}

func isHelp(arg string) bool {
	return arg == "-h" || arg == "-help" || arg == "--help"
}

// Usage is the proto command's usage text.
const Usage = `usage:
  plugkit proto breaking INPUT --against AGAINST [flags]
  plugkit proto history DIR [--against GIT_INPUT] [flags]
  plugkit proto rules [--use ...]

INPUT and AGAINST are directories of .proto files or git inputs in buf's
form: .git#tag=v1.2, .git#branch=main, #ref=SHA, optionally ,subdir=DIR.
A buf.yaml (v1beta1, v1, v2) or buf.work.yaml at an input's root sets its
modules (--config replaces INPUT's); an input that is a module of a
workspace in a parent directory is checked as that module, importing the
workspace's other modules. A buf.yaml's deps are read from buf's module
cache through buf.lock; -I DIR supplies the rest. INPUT's breaking
section (use, except, ignore, ignore_only, ignore_unstable_packages)
applies; --use replaces its use and except, --except its except.
Exit status: 0 no findings, 100 breaking findings, 1 failure.
`

func runProtoBreaking(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("plugkit proto breaking", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var use, except listFlag
	var imports pathFlag
	against := fs.String("against", "", "the previous version: a directory or git input (required)")
	fs.Var(&use, "use", "categories or rule IDs to check, comma-separated (default: INPUT's buf.yaml, else FILE,ADR044)")
	fs.Var(&except, "except", "categories or rule IDs to leave out, comma-separated (default: INPUT's buf.yaml)")
	fs.Var(&imports, "I", "a directory of imported files, e.g. a buf.yaml dependency's checkout (repeatable)")
	format := fs.String("error-format", "text", "output format: text, json, github-actions or junit")
	sinceName := fs.String("since-name", "", "the project name Since lines must use, e.g. cosmos-sdk")
	bufCompat := fs.Bool("buf-compat", false, "report exactly what buf reports (no rename/move detection)")
	bufNames := fs.Bool("buf-names", false, "name messages, enums and services by short name, as buf does")
	excludeImports := fs.Bool("exclude-imports", false, "leave imported files out of the comparison, as buf's --exclude-imports")
	config := fs.String("config", "", "a buf.yaml file, or its content as YAML or JSON, to use instead of INPUT's")
	againstConfig := fs.String("against-config", "", "a buf.yaml file, or its content as YAML or JSON, to use instead of AGAINST's")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: plugkit proto breaking INPUT --against AGAINST [flags]")
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitFailure
	}
	if len(pos) != 1 || *against == "" {
		fmt.Fprintln(stderr, "plugkit proto breaking: need exactly one INPUT and --against AGAINST")
		fs.Usage()
		return exitFailure
	}
	if _, err := ruleset.SelectRules(use, except); err != nil {
		fmt.Fprintf(stderr, "plugkit proto breaking: %v\n", err)
		return exitFailure
	}
	warnDeprecated(stderr, use, except)
	if !formatOK(stderr, "plugkit proto breaking", *format) {
		return exitFailure
	}
	ctx := context.Background()
	lo := load.LoadOptions{ImportPaths: imports, Config: *config, AgainstConfig: *againstConfig}
	newImg, oldImg, newErr, oldErr := load.LoadPair(ctx, pos[0], *against, lo)
	if newErr != nil || oldErr != nil {
		return reportLoadErrors(stdout, stderr, *format, *bufCompat, newErr, oldErr)
	}
	// With a buf.yaml or buf.work.yaml in INPUT, its modules' breaking
	// configuration applies; --use and --except override it.
	findings, err := protocheck.BreakingBuf(oldImg, newImg, protocheck.Options{
		Use: use, Except: except, BufCompat: *bufCompat, BufNames: *bufNames, SinceName: *sinceName,
		ExcludeImports: *excludeImports,
	})
	if err != nil {
		fmt.Fprintf(stderr, "plugkit proto breaking: %v\n", err)
		return exitFailure
	}
	prefix := newImg.Root
	if newImg.ModulePaths() {
		// Files of modules below the input root: show where they are.
		for i := range findings {
			findings[i].Path = newImg.DisplayPath(findings[i].Path)
		}
		report.Sort(findings) // buf sorts by the path shown
		prefix = ""
	}
	return writeReport(stdout, stderr, "plugkit proto breaking", *format, prefix, findings)
}

func runProtoHistory(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("plugkit proto history", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var imports pathFlag
	against := fs.String("against", "", "git input holding the released versions, e.g. .git#tag=v1.0,subdir=proto")
	fs.Var(&imports, "I", "extra import directory (repeatable)")
	format := fs.String("error-format", "text", "output format: text, json, github-actions or junit")
	bufCompat := fs.Bool("buf-compat", false, "compare minors exactly as buf would (no move detection)")
	bufNames := fs.Bool("buf-names", false, "name messages, enums and services by short name, as buf does")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: plugkit proto history DIR [--against GIT_INPUT] [flags]")
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitFailure
	}
	if len(pos) != 1 {
		fmt.Fprintln(stderr, "plugkit proto history: need exactly one DIR")
		fs.Usage()
		return exitFailure
	}
	if !formatOK(stderr, "plugkit proto history", *format) {
		return exitFailure
	}
	findings, err := protocheck.History(context.Background(), pos[0], protocheck.HistoryOptions{
		Against: *against, Load: load.LoadOptions{ImportPaths: imports}, BufCompat: *bufCompat, BufNames: *bufNames,
	})
	if err != nil {
		fmt.Fprintf(stderr, "plugkit proto history: %v\n", err)
		return exitFailure
	}
	root := strings.TrimSuffix(strings.ReplaceAll(pos[0], "\\", "/"), "/")
	if root == "." {
		root = ""
	}
	return writeReport(stdout, stderr, "plugkit proto history", *format, root, findings)
}

// formatOK reports whether format is an --error-format report writes, and
// says on stderr when it is not.
func formatOK(stderr io.Writer, cmd, format string) bool {
	if err := report.CheckFormat(format); err != nil {
		fmt.Fprintf(stderr, "%s: --error-format: %v\n", cmd, err)
		return false
	}
	return true
}

// writeReport writes findings in format and returns the exit status, as buf's:
// 100 when any finding fails the check, 1 when they cannot be written.
func writeReport(stdout, stderr io.Writer, cmd, format, prefix string, findings []report.Finding) int {
	if err := report.Write(stdout, format, prefix, findings); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", cmd, err)
		return exitFailure
	}
	if report.Failing(findings) {
		return exitFindings
	}
	return exitOK
}

func runProtoRules(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("plugkit proto rules", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var use listFlag
	fs.Var(&use, "use", "only rules of these categories or IDs")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitFailure
	}
	var set map[string]bool
	if len(use) > 0 {
		var err error
		if set, err = ruleset.SelectRules(use, nil); err != nil {
			fmt.Fprintf(stderr, "plugkit proto rules: %v\n", err)
			return exitFailure
		}
	}
	rules := append([]ruleset.Rule(nil), ruleset.Rules...)
	sort.SliceStable(rules, func(i, j int) bool { return rules[i].ID < rules[j].ID })
	for _, r := range rules {
		if set != nil && !set[r.ID] {
			continue
		}
		fmt.Fprintf(stdout, "%-46s %-32s %s\n", r.ID, strings.Join(r.Categories, ","), r.Purpose)
	}
	return exitOK
}
