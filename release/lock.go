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
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/opencontainers/go-digest"
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
	Platform string        // "linux/amd64"
	Name     string        // the file name it installs as
	Digest   digest.Digest // the binary's SHA-256, "sha256:HEX"
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
	p := lockParser{lines: map[string]int{}}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if msg := p.parse(n, line); msg != "" {
			return nil, fmt.Errorf("%s:%d: %s (the line reads %q); restore the file from version control or delete the plugin's entry and run plugkit lock again", name, n, msg, sc.Text())
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	for _, lp := range p.l.Plugins {
		missing := ""
		switch {
		case lp.Version == "":
			missing = "version"
		case lp.Index == "":
			missing = "index"
		case len(lp.Binaries) == 0:
			missing = "binary"
		}
		if missing != "" {
			return nil, fmt.Errorf("%s:%d: plugin %s lacks its %s line; restore the file from version control or delete the plugin's entry and run plugkit lock again", name, p.lines[lp.Source], lp.Source, missing)
		}
	}
	return &p.l, nil
}

// lockParser reads a lock file line by line.
type lockParser struct {
	l          Lock
	cur        *LockedPlugin
	sawVersion bool
	// lines are the line numbers of the plugin lines, by source.
	lines map[string]int
}

// parse reads line n, neither blank nor a comment; it returns what is
// wrong with it, or "".
func (p *lockParser) parse(n int, line string) string {
	key, rest, _ := strings.Cut(line, " ")
	rest = strings.TrimSpace(rest)
	fields := strings.Fields(rest)
	switch {
	case key == "lock-version":
		if rest != "1" {
			return fmt.Sprintf("lock-version %q: this plugkit reads version 1", rest)
		}
		p.sawVersion = true
	case !p.sawVersion:
		return "a lock file starts with lock-version 1"
	case key == "plugin":
		if len(fields) != 1 {
			return "want plugin SOURCE"
		}
		if p.l.Find(fields[0]) != nil {
			return fmt.Sprintf("plugin %s is listed twice", fields[0])
		}
		p.l.Plugins = append(p.l.Plugins, LockedPlugin{Source: fields[0]})
		p.cur, p.lines[fields[0]] = &p.l.Plugins[len(p.l.Plugins)-1], n
	case p.cur == nil:
		return fmt.Sprintf("%q comes before any plugin line", key)
	case key == "version", key == "constraint", key == "index":
		return p.cur.setField(key, rest, fields)
	case key == "binary":
		if len(fields) != 3 || strings.Count(fields[0], "/") != 1 {
			return "want binary OS/ARCH NAME sha256:HEX"
		}
		if slices.ContainsFunc(p.cur.Binaries, func(b LockedBinary) bool { return b.Platform == fields[0] }) {
			return fmt.Sprintf("plugin %s has a second binary line for %s", p.cur.Source, fields[0])
		}
		if !plainName(fields[1]) {
			return fmt.Sprintf("binary: %q is not a plain file name (no directory, not hidden, printable)", fields[1])
		}
		d, err := parseDigest(fields[2:])
		if err != nil {
			return "binary: " + err.Error()
		}
		p.cur.Binaries = append(p.cur.Binaries, LockedBinary{Platform: fields[0], Name: fields[1], Digest: d})
	default:
		return fmt.Sprintf("unknown keyword %q (want plugin, version, constraint, index or binary)", key)
	}
	return ""
}

// setField reads a plugin's version, constraint or index line; it
// returns what is wrong with it, or "".
func (lp *LockedPlugin) setField(key, rest string, fields []string) string {
	if (key == "version" && lp.Version != "") || (key == "constraint" && lp.Constraint != "") || (key == "index" && lp.Index != "") {
		return fmt.Sprintf("plugin %s has a second %s line", lp.Source, key)
	}
	switch key {
	case "version":
		if len(fields) != 1 {
			return "want version VERSION"
		}
		lp.Version = fields[0]
	case "constraint":
		c, err := strconv.Unquote(rest)
		if err != nil {
			return "want constraint \"QUOTED\""
		}
		lp.Constraint = c
	case "index":
		d, err := parseDigest(fields)
		if err != nil {
			return "index: " + err.Error()
		}
		lp.Index = d
	}
	return ""
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

// Pins returns manager.Finder.Pins for this machine's platform and the
// WebAssembly modules (PlatformWasm, NAME.wasm): each locked binary's
// file name mapped to its hex SHA-256, so that the manager refuses a
// binary that differs from the locked one.
func (l *Lock) Pins() map[string]string {
	pins := map[string]string{}
	for _, p := range l.Plugins {
		for _, b := range p.Binaries {
			if b.Platform == hostPlatform || b.Platform == PlatformWasm {
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
	if err := signedVersion(repo, rel); err != nil {
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
		p.Binaries = append(p.Binaries, LockedBinary{Platform: pl, Name: fileName(l), Digest: l.Digest})
	}
	sort.Slice(p.Binaries, func(i, j int) bool { return p.Binaries[i].Platform < p.Binaries[j].Platform })
	return p, nil
}
