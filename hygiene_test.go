package plugkit

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// maxTrackedSize is the largest file the repository keeps outside
// largeFilesAllowed: anything bigger is a build output or a data set that
// belongs elsewhere.
const maxTrackedSize = 1 << 20

// largeFilesAllowed lists the test data allowed above maxTrackedSize, by
// path from the repository's root. Keep it short and say why beside each.
var largeFilesAllowed = map[string]bool{}

// executableMagic holds the first bytes of the executable formats a Go
// toolchain writes: ELF, PE, Mach-O (both byte orders, 32 and 64 bits, and
// universal) and WebAssembly.
var executableMagic = [][]byte{
	[]byte("\x7fELF"),
	[]byte("MZ"),
	{0xfe, 0xed, 0xfa, 0xce}, {0xce, 0xfa, 0xed, 0xfe},
	{0xfe, 0xed, 0xfa, 0xcf}, {0xcf, 0xfa, 0xed, 0xfe},
	{0xca, 0xfe, 0xba, 0xbe},
	[]byte("\x00asm"),
}

// trackedFile is one file of the repository with what the check needs.
type trackedFile struct {
	path       string // slash-separated, from the root
	executable bool   // the index (or the file system) marks it executable
}

// trackedFiles lists the files git tracks, with their modes from the index;
// outside a git checkout (an unpacked archive) it walks the tree instead,
// leaving out what .gitignore names for build outputs.
func trackedFiles(t *testing.T) []trackedFile {
	t.Helper()
	if _, err := os.Stat(".git"); err == nil {
		if git, err := exec.LookPath("git"); err == nil {
			out, err := exec.Command(git, "ls-files", "-s", "-z").Output()
			if err != nil {
				t.Fatalf("git ls-files: %v", err)
			}
			var files []trackedFile
			for _, rec := range bytes.Split(out, []byte{0}) {
				if len(rec) == 0 {
					continue
				}
				// "MODE OBJECT STAGE\tPATH"
				meta, path, ok := strings.Cut(string(rec), "\t")
				if !ok {
					t.Fatalf("git ls-files: unexpected record %q", rec)
				}
				mode, _, _ := strings.Cut(meta, " ")
				if mode == "160000" || mode == "120000" { // submodule, symlink
					continue
				}
				files = append(files, trackedFile{path: path, executable: mode == "100755"})
			}
			return files
		}
	}
	var files []trackedFile
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		slash := filepath.ToSlash(path)
		if d.IsDir() {
			switch slash {
			case ".git", "bin", "dist", "bench/tmp", "plugins":
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || ignoredOutput(slash) {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		files = append(files, trackedFile{path: slash, executable: info.Mode()&0o111 != 0})
		return nil
	})
	if err != nil {
		t.Fatalf("walking the tree: %v", err)
	}
	return files
}

// TestNoBuildOutputsTracked fails when the repository keeps an executable
// binary, an executable file that is not a script, or a file larger than
// 1 MiB that is not on the allow-list: build outputs are made by make, never
// committed.
func TestNoBuildOutputsTracked(t *testing.T) {
	files := trackedFiles(t)
	if len(files) < 10 {
		t.Fatalf("found only %d files: is the test running from the repository's root?", len(files))
	}
	for _, f := range files {
		info, err := os.Stat(filepath.FromSlash(f.path))
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted in the work tree, not yet committed
		}
		if err != nil {
			t.Errorf("%s: %v", f.path, err)
			continue
		}
		if info.Size() > maxTrackedSize && !largeFilesAllowed[f.path] {
			t.Errorf("%s is %d bytes, above the %d allowed: remove it from git (git rm --cached %s) or, if it is test data that must live here, add it to largeFilesAllowed with the reason", f.path, info.Size(), maxTrackedSize, f.path)
		}
		head, err := readHead(f.path, 4)
		if err != nil {
			t.Errorf("%s: %v", f.path, err)
			continue
		}
		for _, magic := range executableMagic {
			if bytes.HasPrefix(head, magic) {
				t.Errorf("%s is an executable binary (it starts %q): remove it from git (git rm --cached %s) and build it with make instead", f.path, magic, f.path)
				break
			}
		}
		if f.executable && !bytes.HasPrefix(head, []byte("#!")) {
			t.Errorf("%s is marked executable but is not a script: remove the executable bit or the file", f.path)
		}
	}
}

// TestBinaryCheckCatchesExecutables proves the check above recognises the
// executable the toolchain writes on this machine: the test binary itself.
func TestBinaryCheckCatchesExecutables(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	head, err := readHead(self, 4)
	if err != nil {
		t.Fatal(err)
	}
	for _, magic := range executableMagic {
		if bytes.HasPrefix(head, magic) {
			return
		}
	}
	t.Fatalf("the test binary %s starts %q, which no entry of executableMagic matches", self, head)
}

// readHead returns up to n bytes from the start of the file at path.
func readHead(path string, n int) ([]byte, error) {
	f, err := os.Open(filepath.FromSlash(path))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, n)
	got, err := io.ReadFull(f, buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return buf[:got], nil
}

// ignoredOutput reports whether .gitignore names the file as a build
// output (the walk's stand-in for git's index outside a checkout).
func ignoredOutput(slash string) bool {
	switch slash {
	case "plugkit", "cmd/plugkit/plugkit", "plugins.cache.json":
		return true
	}
	for _, ext := range []string{".test", ".exe"} {
		if strings.HasSuffix(slash, ext) {
			return true
		}
	}
	return strings.HasSuffix(slash, ".out") && !strings.Contains("/"+slash, "/testdata/")
}
