package backend

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

// DirEnv names the directory of the fs backend when Init gives none.
const DirEnv = "OBJECTSTORE_FS_DIR"

// FS keeps each object as a file under a directory: real files a person
// can look at.
type FS struct {
	mu  sync.RWMutex
	dir string
}

// Init takes the directory from config "dir", or else from the
// OBJECTSTORE_FS_DIR environment variable, and creates it.
func (f *FS) Init(config map[string]string) error {
	dir := config["dir"]
	if dir == "" {
		dir = os.Getenv(DirEnv)
	}
	if dir == "" {
		return fmt.Errorf("fs store: no directory: set the \"dir\" config or %s", DirEnv)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("fs store: %w", notGranted(dir, err))
	}
	f.mu.Lock()
	f.dir = dir
	f.mu.Unlock()
	return nil
}

// notGranted explains err, the failure to make dir, when this plugin runs
// as a WebAssembly module that was not granted the directory: there a
// path outside every granted directory fails with EBADF, "Bad file
// number", which says nothing of the cause.
func notGranted(dir string, err error) error {
	if runtime.GOOS != "wasip1" || !errors.Is(err, syscall.EBADF) {
		return err
	}
	return fmt.Errorf("%s is in no directory granted to this WebAssembly plugin: grant it (or a directory above it) to the guest, writable (wasmhost.Config.Dirs; plugkit call and inspect: --grant-rw DIR), or configure a directory inside one granted (%w)", dir, err)
}

func (f *FS) path(key string) (string, error) {
	f.mu.RLock()
	dir := f.dir
	f.mu.RUnlock()
	if dir == "" {
		return "", errors.New("fs store: not initialised: call Init with a \"dir\" first")
	}
	if key == "" || !filepath.IsLocal(key) || strings.HasSuffix(key, "/") {
		return "", fmt.Errorf("fs store: key %q must be a relative path without '..'", key)
	}
	return filepath.Join(dir, filepath.FromSlash(key)), nil
}

// Put writes the object to a temporary file and renames it into place,
// so a reader never sees half an object.
func (f *FS) Put(key string, data []byte) error {
	p, err := f.path(key)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".put-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), p)
}

// Get reads the object's file.
func (f *FS) Get(key string) ([]byte, error) {
	p, err := f.path(key)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNotFound
	}
	return data, err
}

// List walks the directory for keys starting with prefix.
func (f *FS) List(prefix string) ([]string, error) {
	f.mu.RLock()
	dir := f.dir
	f.mu.RUnlock()
	if dir == "" {
		return nil, errors.New("fs store: not initialised: call Init with a \"dir\" first")
	}
	var keys []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasPrefix(d.Name(), ".put-") {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if key := filepath.ToSlash(rel); strings.HasPrefix(key, prefix) {
			keys = append(keys, key)
		}
		return nil
	})
	sort.Strings(keys)
	return keys, err
}

// Delete removes the object's file.
func (f *FS) Delete(key string) error {
	p, err := f.path(key)
	if err != nil {
		return err
	}
	if err := os.Remove(p); errors.Is(err, fs.ErrNotExist) {
		return ErrNotFound
	} else if err != nil {
		return err
	}
	return nil
}

// FileURL returns a file:// URL for the object, the fs store's answer to
// the presign capability: a local reader needs no signature.
func (f *FS) FileURL(key string, _ time.Duration) (string, error) {
	p, err := f.path(key)
	if err != nil {
		return "", err
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}).String(), nil
}
