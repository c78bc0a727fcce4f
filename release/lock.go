package release

import (
	"bufio"
	"bytes"
	"context"
	"crypto"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// ErrLockMismatch: a release or binary differs from the digest the lock
// file records.
var ErrLockMismatch = errors.New("it does not match the lock file")

// lockHeader starts every lock file.
const lockHeader = `# plugkit lock file: commit it. It is written by plugkit install and
# plugkit lock; with it, install fetches exactly these releases.
lock-version 1
`

// Lock is a lock file: for each plugin installed, the release and the
// digest of every platform's binary.
type Lock struct {
	// Plugins are in the file's order; Set keeps them sorted by Source.
	Plugins []LockedPlugin
}

// LockedPlugin is one plugin in a lock file.
type LockedPlugin struct {
	// Source is the repository, "REGISTRY/REPO" or "oci-layout:DIR".
	Source string
	// Version is the release's tag.
	Version string
	// Constraint is the version constraint it was resolved by, if any.
	Constraint string
	// Index is the digest of the release's index, what its signature
	// covers.
	Index digest.Digest
	// Binaries are the platforms' binaries, sorted by platform.
	Binaries []LockedBinary
}

// LockedBinary is one platform's binary of a locked release.
type LockedBinary struct {
	Platform string // "linux/amd64"
	Name     string // the file name it installs as
	Digest   digest.Digest
}

// ReadLock reads a lock file; a missing file is an empty lock.
func ReadLock(path string) (*Lock, error) {
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return &Lock{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("lock file: %w", err)
	}
	return ParseLock(path, raw)
}

// ParseLock reads a lock file's text; errors name the file (name) and
// the line.
func ParseLock(name string, data []byte) (*Lock, error) {
	l := &Lock{}
	var cur *LockedPlugin
	sawVersion := false
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		bad := func(format string, args ...any) error {
			return fmt.Errorf("%s:%d: %s (the line reads %q); restore the file from version control or delete the plugin's entry and run plugkit lock again", name, n, fmt.Sprintf(format, args...), sc.Text())
		}
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, rest, _ := strings.Cut(line, " ")
		rest = strings.TrimSpace(rest)
		fields := strings.Fields(rest)
		switch {
		case key == "lock-version":
			if rest != "1" {
				return nil, bad("lock-version %q: this plugkit reads version 1", rest)
			}
			sawVersion = true
		case !sawVersion:
			return nil, bad("a lock file starts with lock-version 1")
		case key == "plugin":
			if len(fields) != 1 {
				return nil, bad("want plugin SOURCE")
			}
			if l.Find(fields[0]) != nil {
				return nil, bad("plugin %s is listed twice", fields[0])
			}
			l.Plugins = append(l.Plugins, LockedPlugin{Source: fields[0]})
			cur = &l.Plugins[len(l.Plugins)-1]
		case cur == nil:
			return nil, bad("%q comes before any plugin line", key)
		case key == "version":
			if len(fields) != 1 {
				return nil, bad("want version VERSION")
			}
			cur.Version = fields[0]
		case key == "constraint":
			c, err := strconv.Unquote(rest)
			if err != nil {
				return nil, bad("want constraint \"QUOTED\"")
			}
			cur.Constraint = c
		case key == "index":
			d, err := parseDigest(fields)
			if err != nil {
				return nil, bad("index: %v", err)
			}
			cur.Index = d
		case key == "binary":
			if len(fields) != 3 || strings.Count(fields[0], "/") != 1 {
				return nil, bad("want binary OS/ARCH NAME sha256:HEX")
			}
			d, err := parseDigest(fields[2:])
			if err != nil {
				return nil, bad("binary: %v", err)
			}
			cur.Binaries = append(cur.Binaries, LockedBinary{Platform: fields[0], Name: fields[1], Digest: d})
		default:
			return nil, bad("unknown keyword %q (want plugin, version, constraint, index or binary)", key)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	for _, p := range l.Plugins {
		if p.Version == "" || p.Index == "" || len(p.Binaries) == 0 {
			return nil, fmt.Errorf("%s: plugin %s lacks its version, index or binary lines; restore the file from version control or run plugkit lock again", name, p.Source)
		}
	}
	return l, nil
}

func parseDigest(fields []string) (digest.Digest, error) {
	if len(fields) != 1 {
		return "", errors.New("want one sha256:HEX")
	}
	d, err := digest.Parse(fields[0])
	if err != nil || d.Algorithm() != digest.SHA256 {
		return "", fmt.Errorf("%q is not sha256:HEX (64 hex digits)", fields[0])
	}
	return d, nil
}

// Bytes returns the lock file's text.
func (l *Lock) Bytes() []byte {
	var b bytes.Buffer
	b.WriteString(lockHeader)
	for _, p := range l.Plugins {
		fmt.Fprintf(&b, "\nplugin %s\n\tversion %s\n", p.Source, p.Version)
		if p.Constraint != "" {
			fmt.Fprintf(&b, "\tconstraint %q\n", p.Constraint)
		}
		fmt.Fprintf(&b, "\tindex %s\n", p.Index)
		for _, bin := range p.Binaries {
			fmt.Fprintf(&b, "\tbinary %s %s %s\n", bin.Platform, bin.Name, bin.Digest)
		}
	}
	return b.Bytes()
}

// WriteFile writes the lock file atomically.
func (l *Lock) WriteFile(path string) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("lock file: %w", err)
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(l.Bytes()); err != nil {
		f.Close()
		return fmt.Errorf("lock file: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("lock file: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("lock file: %w", err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("lock file: %w", err)
	}
	return nil
}

// Find returns the entry for source, or nil.
func (l *Lock) Find(source string) *LockedPlugin {
	for i := range l.Plugins {
		if l.Plugins[i].Source == source {
			return &l.Plugins[i]
		}
	}
	return nil
}

// Set adds p, or replaces the entry of its source; entries stay sorted.
func (l *Lock) Set(p LockedPlugin) {
	if old := l.Find(p.Source); old != nil {
		*old = p
		return
	}
	l.Plugins = append(l.Plugins, p)
	sort.Slice(l.Plugins, func(i, j int) bool { return l.Plugins[i].Source < l.Plugins[j].Source })
}

// Pins returns manager.Config.Pins for this machine's platform: each
// locked binary's file name mapped to its hex SHA-256, so that the
// manager refuses a binary that differs from the locked one.
func (l *Lock) Pins() map[string]string {
	here := runtime.GOOS + "/" + runtime.GOARCH
	pins := map[string]string{}
	for _, p := range l.Plugins {
		for _, b := range p.Binaries {
			if b.Platform == here {
				pins[b.Name] = b.Digest.Encoded()
			}
		}
	}
	return pins
}

// check refuses a binary of platform whose digest is not the locked one.
func (p *LockedPlugin) check(platform string, d digest.Digest) error {
	for _, b := range p.Binaries {
		if b.Platform == platform {
			if b.Digest != d {
				return fmt.Errorf("%s:%s: the %s binary is %s, the lock file has %s: %w; do not install it", p.Source, p.Version, platform, d, b.Digest, ErrLockMismatch)
			}
			return nil
		}
	}
	return fmt.Errorf("%s:%s: the lock file has no digest for %s: run plugkit lock --platform %s on a trusted machine and commit the lock file", p.Source, p.Version, platform, platform)
}

// LockRelease returns the lock entry for rel after verifying its
// signature: the digests of the platforms named (all of the release's
// when none is), read from its signed manifests without downloading a
// binary. Pass the previous entry as prev to add platforms to it; the
// release must then be the one prev locks.
func LockRelease(ctx context.Context, repo *Repository, rel Release, keys []crypto.PublicKey, constraint string, platforms []string, prev *LockedPlugin) (LockedPlugin, error) {
	if prev != nil && prev.Index != rel.Digest {
		return LockedPlugin{}, fmt.Errorf("%s:%s is %s, the lock file has %s: %w; the tag was moved", repo.Source, rel.Version, rel.Digest, prev.Index, ErrLockMismatch)
	}
	if err := Verify(ctx, repo, rel.Digest, keys); err != nil {
		return LockedPlugin{}, err
	}
	p := LockedPlugin{Source: repo.Source, Version: rel.Version, Constraint: constraint, Index: rel.Digest}
	if prev != nil {
		p.Constraint, p.Binaries = prev.Constraint, slices.Clone(prev.Binaries)
	}
	if len(platforms) == 0 {
		platforms = rel.Platforms
	}
	for _, pl := range platforms {
		l, err := binaryLayer(ctx, repo, rel, pl)
		if err != nil {
			return LockedPlugin{}, err
		}
		p.Binaries = slices.DeleteFunc(p.Binaries, func(b LockedBinary) bool { return b.Platform == pl })
		p.Binaries = append(p.Binaries, LockedBinary{Platform: pl, Name: l.Annotations[ocispec.AnnotationTitle], Digest: l.Digest})
	}
	sort.Slice(p.Binaries, func(i, j int) bool { return p.Binaries[i].Platform < p.Binaries[j].Platform })
	return p, nil
}
