package protocli

import (
	"errors"
	"fmt"
	"io"

	"github.com/plugkit/plugkit/protocheck/load"
	"github.com/plugkit/plugkit/protocheck/ruleset"
)

// reportLoadErrors reports inputs that could not be loaded. In buf-compatible
// mode an input that does not compile is reported as buf reports it: COMPILE
// findings in the chosen format on stdout and exit status 100 (the input's
// problems if it has any, else the against input's). Any other error, and
// every error outside buf-compatible mode, goes to stderr with exit status 1.
func reportLoadErrors(stdout, stderr io.Writer, format string, bufCompat bool, newErr, oldErr error) int {
	if bufCompat {
		var ce *load.CompileError
		first := newErr
		if first == nil {
			first = oldErr
		}
		if errors.As(first, &ce) {
			return writeReport(stdout, stderr, "plugkit proto breaking", format, "", ce.Findings())
		}
	}
	for _, err := range []error{newErr, oldErr} {
		if err != nil {
			fmt.Fprintf(stderr, "plugkit proto breaking: %v\n", err)
		}
	}
	return exitFailure
}

// warnDeprecated prints a warning on stderr for each deprecated rule ID in
// the selection (buf warns too, and runs on).
func warnDeprecated(stderr io.Writer, use, except []string) {
	for _, w := range ruleset.DeprecationWarnings(use, except) {
		fmt.Fprintf(stderr, "plugkit proto breaking: warning: %s\n", w)
	}
}
