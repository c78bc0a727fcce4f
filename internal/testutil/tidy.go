package testutil

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"
)

// TidyEnv is set, in the environment of a test binary run by Main and so
// of every process its tests start, to that test binary's private
// temporary directory: it marks the processes Main looks for at the end.
const TidyEnv = "PLUGKIT_TEST_TIDY"

// tidyWait is how long Main waits, after the tests, for the processes they
// started to exit and for what those leave to be removed by their owners.
// A tidy run waits not at all: the wait ends as soon as nothing is left.
const tidyWait = 15 * time.Second

// Main runs m's tests, as m.Run does, in a private temporary directory,
// and fails the test binary (exit status 1) when the tests leave anything
// behind: a file or directory in that temporary directory, or a process
// they started (or that one of those started) still running. It returns
// the exit status for os.Exit. Use it from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(testutil.Main(m)) }
//
// The directory (tidyDir) is made in the temporary directory of the caller and set
// as TMPDIR for the tests and every process they start, so that leaks
// land there (and not in the user's /tmp, even when the check fails: Main
// removes the directory in all cases). Each test binary has its own, so
// packages tested in parallel cannot see each other's files. Like /tmp it
// is sticky and writable by all, since some tests run a copy of their
// binary as another user. Main names what was left and, for a process, its
// command line, and kills it.
//
// With goleak, whose VerifyTestMain runs the tests itself, pass it
// Tidy(m) instead.
//
// On Windows, Main is m.Run: the tests there run under Wine, whose
// removal of directories is unreliable (see TempDir).
//
// Everywhere, the go commands the tests start build with -trimpath
// (trimpathGOFLAGS).
func Main(m TestingM) int {
	trimpathGOFLAGS()
	if runtime.GOOS == "windows" || os.Getenv(TidyEnv) != "" {
		// A test binary that a test of another runs (as another user,
		// say) is checked with that one's directory and processes.
		return m.Run()
	}
	dir, err := tidyDir()
	if err != nil {
		fmt.Fprintf(os.Stderr, "testutil.Main: making the tests' private temporary directory: %v (is TMPDIR writable?)\n", err)
		return 1
	}
	defer os.RemoveAll(dir)
	os.Setenv("TMPDIR", dir)
	os.Setenv(TidyEnv, dir)
	code := m.Run()
	if leftBehind(os.Stderr, dir, tidyWait) && code == 0 {
		code = 1
	}
	return code
}

// tidyDir makes Main's directory in the temporary directory: pk and the
// process ID, a name as short as can be, since the tests make unix sockets
// in directories of their own inside it (t.TempDir, named after the test),
// and a socket's path may not exceed listen.MaxUnixPath. A directory of
// that name left by a test binary killed before it could remove it is
// removed first, if it is this user's; if it is not, a name of
// os.MkdirTemp's is taken instead.
func tidyDir() (string, error) {
	dir := filepath.Join(os.TempDir(), "pk"+strconv.Itoa(os.Getpid()))
	if fi, err := os.Lstat(dir); err == nil && fi.IsDir() && ownedByMe(fi) {
		os.RemoveAll(dir)
	}
	err := os.Mkdir(dir, 0o700)
	if errors.Is(err, fs.ErrExist) {
		dir, err = os.MkdirTemp("", "pk")
	}
	if err != nil {
		return "", err
	}
	return dir, os.Chmod(dir, 0o777|os.ModeSticky)
}

// TestingM is what Main runs: a *testing.M, or what wraps one.
type TestingM interface {
	Run() int
}

// Tidy returns m with Main around its Run, for a TestMain that hands m to
// another runner, such as goleak.VerifyTestMain.
func Tidy(m TestingM) TestingM { return tidied{m} }

type tidied struct{ m TestingM }

// Then returns m with cleanup run after its tests: what a TestMain removes
// at the end (a build directory shared by its tests) is then gone before
// Main looks.
func Then(m TestingM, cleanup func()) TestingM { return then{m, cleanup} }

type then struct {
	m       TestingM
	cleanup func()
}

func (t then) Run() int {
	defer t.cleanup()
	return t.m.Run()
}

func (t tidied) Run() int { return Main(t.m) }

// leftBehind waits (at most wait) for the processes marked with dir to
// end and for dir to empty, then writes to w what is still there, kills
// such processes, and reports whether there was anything.
func leftBehind(w io.Writer, dir string, wait time.Duration) bool {
	var procs []process
	var files []string
	for deadline := time.Now().Add(wait); ; time.Sleep(50 * time.Millisecond) {
		procs = tidyProcesses(dir)
		files = entries(dir)
		if len(procs) == 0 && len(files) == 0 || time.Now().After(deadline) {
			break
		}
	}
	for _, p := range procs {
		fmt.Fprintf(w, "FAIL: the tests left process %d running: %s (a test must stop, and wait for, every process it starts)\n", p.pid, p.cmdline)
		Kill(p.pid)
	}
	if len(files) > 0 {
		fmt.Fprintf(w, "FAIL: the tests left %d entries in their temporary directory %s (a test must remove what it makes there, or use t.TempDir): %s\n",
			len(files), dir, strings.Join(files, ", "))
	}
	return len(procs) > 0 || len(files) > 0
}

// entries lists what dir holds, one level down too (to say what a
// leftover directory is: a socket's directory, a build's), as paths
// relative to dir.
func entries(dir string) []string {
	top, _ := os.ReadDir(dir)
	var out []string
	for _, e := range top {
		name := e.Name()
		if e.IsDir() {
			inner, _ := os.ReadDir(filepath.Join(dir, name))
			var names []string
			for _, f := range inner {
				names = append(names, f.Name())
			}
			name += "/{" + strings.Join(names, ",") + "}"
		}
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// process is a process Main found still running.
type process struct {
	pid     int
	cmdline string
}
