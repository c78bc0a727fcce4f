package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/plugkit/plugkit/internal/hostwire"
)

// withPathHint adds to err, the failure to start the plugin named path, a
// hint when path is a bare name that PATH lacks but the current directory
// holds: a name without a slash is looked up in PATH only, as a shell
// does, and the user most likely meant the file here.
func withPathHint(path string, err error) error {
	if strings.ContainsRune(path, '/') || strings.ContainsRune(path, os.PathSeparator) {
		return err
	}
	if hostwire.IsWasm(path) { // a module is read from the file named, never looked up in PATH
		return err
	}
	if _, lookErr := exec.LookPath(path); lookErr == nil {
		return err
	}
	fi, statErr := os.Stat(path)
	if statErr != nil || fi.IsDir() {
		return err
	}
	return fmt.Errorf("%w; did you mean ./%s? (a name without a slash is looked up in PATH only)", err, path)
}
