package release

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/plugkit/plugkit/internal/osdep"
)

// execByFD says whether a staged binary is started through the read-only
// descriptor stage opened on the file it wrote (Linux: /proc/self/fd),
// rather than by its path with the host hashing it again (the pin).
const execByFD = osdep.ExecOpenFile

// hostPlatform is this machine's platform, OS/ARCH, as releases name it.
const hostPlatform = runtime.GOOS + "/" + runtime.GOARCH

// copyBuffer is how much of a download copyHashed holds at once, in
// hashBuffers pieces.
const copyBuffer = 1 << 20

// staged is a downloaded binary whose size and SHA-256 were checked, in a
// temporary file beside path: not yet installed, and not found under any
// name a manager or host looks for (it starts with a dot).
//
// Why the binary started for Describe is the one whose digest was checked
// without hashing the file again (execByFD): stage creates the temporary
// file itself (O_EXCL, mode 0600), hashes every byte while writing it
// through its own descriptor, then opens a read-only descriptor and checks
// it is the same file (device and inode) it wrote; the host executes that
// descriptor, never the path. A process swapping names in the directory
// therefore cannot make it run another file, and only this user or root
// can open the file for writing at all: both can already change the
// installed binary, the trusted keys and the lock file, so a second hash
// would not protect against them. A writer still holding the file open
// makes the start fail (ETXTBSY), and once started the kernel refuses
// writes to it. Where execByFD is false the host hashes the file it
// starts against the digest instead (Command.SHA256), as before.
type staged struct {
	path, tmp string
	// module is set for a WebAssembly module (MediaTypeWasm): it is
	// run in Target.Guests, and need not be executable.
	module bool
	// ro is the read-only descriptor of the written file (execByFD).
	ro *os.File
}

// stage copies r to a temporary file beside path, checking it has l's size
// and digest, and makes it executable; on any failure it removes the
// temporary file. The file's name starts with a dot and ends with path's
// base name, so that it keeps its extension (.exe) while it is started.
// createTemp makes that file (installHooks.create).
func stage(path string, r io.Reader, l ocispec.Descriptor, createTemp func(dir, pattern string) (io.WriteCloser, string, error)) (_ *staged, err error) {
	w, tmp, err := createTemp(filepath.Dir(path), ".tmp*-"+filepath.Base(path))
	if err != nil {
		return nil, fmt.Errorf("install: %w", err)
	}
	st := &staged{path: path, tmp: tmp, module: l.MediaType == MediaTypeWasm}
	defer func() {
		if err != nil {
			w.Close()
			st.discard()
		}
	}()
	var out io.Writer = w
	if f, ok := w.(*os.File); ok {
		out = startWriteback(w, f)
	}
	n, sum, err := copyHashed(out, io.LimitReader(r, l.Size+1))
	if err != nil {
		return nil, fmt.Errorf("install: write %s: %w (nothing was installed)", path, err)
	}
	if got := "sha256:" + hex.EncodeToString(sum); n != l.Size || got != l.Digest.String() {
		return nil, fmt.Errorf("%w: the binary %s downloaded as %d bytes with digest %s, the signed manifest says %d bytes, %s: a tampered or corrupt blob; nothing was installed", ErrTampered, filepath.Base(path), n, got, l.Size, l.Digest)
	}
	if err := st.seal(w); err != nil {
		return nil, err
	}
	return st, nil
}

// hashBuffers is how many buffers copyHashed passes between its reader
// and its hasher.
const hashBuffers = 4

// copyHashed copies r to w and returns the SHA-256 of what it copied,
// hashing each piece in another goroutine while it reads and writes the
// next, so that the hash overlaps the network and the file.
func copyHashed(w io.Writer, r io.Reader) (int64, []byte, error) {
	free := make(chan []byte, hashBuffers)
	for range hashBuffers {
		free <- make([]byte, copyBuffer/hashBuffers)
	}
	full := make(chan []byte, hashBuffers)
	sum := make(chan []byte, 1)
	go func() {
		h := sha256.New()
		for b := range full {
			h.Write(b)
			free <- b[:cap(b)]
		}
		sum <- h.Sum(nil)
	}()
	var n int64
	var err error
	for err == nil {
		b := <-free
		k, rerr := io.ReadFull(r, b)
		if k > 0 {
			if _, werr := w.Write(b[:k]); werr != nil {
				rerr = werr
			}
			n += int64(k)
			full <- b[:k]
		}
		switch {
		case rerr == io.EOF || rerr == io.ErrUnexpectedEOF:
			rerr = io.EOF
		case rerr != nil:
			err = rerr
		}
		if rerr == io.EOF {
			break
		}
	}
	close(full)
	return n, <-sum, err
}

// seal makes the written file executable (readable, for a module) and
// closes w: where execByFD, it
// first opens the read-only descriptor the binary is started through and
// checks it is the file written; elsewhere it syncs before closing.
func (st *staged) seal(w io.WriteCloser) error {
	f, ok := w.(*os.File)
	if !ok {
		return w.Close()
	}
	mode := os.FileMode(0o755)
	if st.module {
		mode = 0o644
	}
	if err := f.Chmod(mode); err != nil {
		return fmt.Errorf("install: %w", err)
	}
	if execByFD {
		ro, err := os.Open(st.tmp)
		if err != nil {
			return fmt.Errorf("install: reopen %s: %w", st.tmp, err)
		}
		st.ro = ro
		wi, err1 := f.Stat()
		ri, err2 := ro.Stat()
		if err1 != nil || err2 != nil || !os.SameFile(wi, ri) {
			return fmt.Errorf("install: %s was replaced while it was written: another process writes into %s; nothing was installed", st.tmp, filepath.Dir(st.path))
		}
	} else if err := f.Sync(); err != nil {
		return fmt.Errorf("install: sync %s: %w", st.tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("install: write %s: %w (nothing was installed)", st.path, err)
	}
	return nil
}

// startSync flushes the staged file to disk in the background (where
// execByFD; elsewhere stage synced it) and returns the result's channel,
// so that the flush overlaps the Describe check.
func (st *staged) startSync() <-chan error {
	done := make(chan error, 1)
	if st.ro == nil {
		done <- nil
		return done
	}
	go func() {
		if err := st.ro.Sync(); err != nil {
			done <- fmt.Errorf("install: sync %s: %w", st.tmp, err)
			return
		}
		done <- nil
	}()
	return done
}

// install renames the synced file to its path, once synced is nil, and
// checks that what it renamed is the file it wrote and started.
func (st *staged) install(synced error) error {
	if synced != nil {
		return synced
	}
	if err := os.Rename(st.tmp, st.path); err != nil {
		return fmt.Errorf("install: %w", err)
	}
	if st.ro != nil {
		ri, err1 := st.ro.Stat()
		pi, err2 := os.Stat(st.path)
		if err1 != nil || err2 != nil || !os.SameFile(ri, pi) {
			os.Remove(st.path)
			return fmt.Errorf("install: %s was replaced by another file while it was checked, so it was removed: another process writes into %s; make the directory writable by this user only and install again", st.tmp, filepath.Dir(st.path))
		}
		st.ro.Close()
		st.ro = nil
	}
	syncDir(filepath.Dir(st.path))
	return nil
}

// discard removes the staged file.
func (st *staged) discard() {
	if st.ro != nil {
		st.ro.Close()
		st.ro = nil
	}
	os.Remove(st.tmp)
}
