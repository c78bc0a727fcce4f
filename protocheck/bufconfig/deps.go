package bufconfig

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"

	"go.yaml.in/yaml/v3"
)

// BufLock is the name of buf's lock file, beside a buf.yaml with deps.
const BufLock = "buf.lock"

// FindParent looks in the directories above dir (an input without a
// configuration of its own) for a buf.work.yaml or buf.yaml, as buf does.
// When the nearest one has a module whose directory is dir, it returns the
// workspace's root directory, its configuration and that module; else
// (no configuration above, one buf would not use, or dir is not one of its
// modules) it returns a nil configuration and the input stands alone.
// With workOnly (the input has a v1 buf.yaml of its own) only a
// buf.work.yaml counts. Only configuration files are read.
func FindParent(dir string, workOnly bool) (root string, cfg *Config, target *Module) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", nil, nil
	}
	for d := filepath.Dir(abs); ; d = filepath.Dir(d) {
		if fileExists(filepath.Join(d, BufWorkYAML)) || !workOnly && fileExists(filepath.Join(d, BufYAML)) {
			root = d
			break
		}
		if filepath.Dir(d) == d {
			return "", nil, nil
		}
	}
	rel, err := filepath.Rel(root, abs)
	if err != nil {
		return "", nil, nil
	}
	rel = filepath.ToSlash(rel)
	conf := map[string][]byte{}
	read := func(p string) {
		if data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(p))); err == nil {
			conf[p] = data
		}
	}
	read(BufWorkYAML)
	if _, ok := conf[BufWorkYAML]; !ok {
		read(BufYAML)
		read(BufLock)
	}
	if w, ok := conf[BufWorkYAML]; ok {
		if f, err := parseBufFile(BufWorkYAML, w); err == nil {
			for _, d := range f.Directories {
				read(path.Join(path.Clean(d), BufYAML))
				read(path.Join(path.Clean(d), BufLock))
			}
		}
	}
	cfg, err = Parse(conf)
	if err != nil || cfg == nil {
		return "", nil, nil
	}
	for _, m := range cfg.Modules {
		if m.Dir == rel {
			return root, cfg, m
		}
	}
	return "", nil, nil
}

// ForModule is the configuration of one module m of cfg for an input that
// is m's directory: the module at "." with m's excludes and breaking
// configuration, and cfg's deps. file names the configuration file as
// shown in messages.
func (cfg *Config) ForModule(m *Module, file string) *Config {
	mod := &Module{Dir: ".", Excludes: m.Excludes, Breaking: m.Breaking}
	return &Config{File: file, Version: cfg.Version, Modules: []*Module{mod},
		Deps: cfg.Deps, depDirs: cfg.depDirs, missingDeps: cfg.missingDeps}
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// yamlBufLock is a buf.lock of version v1 or v2.
type yamlBufLock struct {
	Version string `yaml:"version"`
	Deps    []struct {
		Name       string `yaml:"name"`       // v2: buf.build/owner/repository
		Remote     string `yaml:"remote"`     // v1
		Owner      string `yaml:"owner"`      // v1
		Repository string `yaml:"repository"` // v1
		Commit     string `yaml:"commit"`
	} `yaml:"deps"`
}

// resolveDeps finds the deps of a configuration in buf's module cache
// through the buf.lock beside it (lock is nil without one): each locked
// commit found in the cache becomes an import directory; the deps not
// found are listed in missingDeps, for the error that names them.
func (cfg *Config) resolveDeps(deps []string, lockName string, lock []byte) error {
	if len(deps) == 0 {
		return nil
	}
	cfg.Deps = append(cfg.Deps, deps...)
	commits := map[string]string{}
	if lock != nil {
		var l yamlBufLock
		if err := yaml.Unmarshal(lock, &l); err != nil {
			return fmt.Errorf("%s: %w (fix it with buf dep update, or remove it)", lockName, err)
		}
		for _, d := range l.Deps {
			name := d.Name
			if name == "" && d.Remote != "" {
				name = d.Remote + "/" + d.Owner + "/" + d.Repository
			}
			commits[name] = strings.ReplaceAll(d.Commit, "-", "")
		}
	}
	cache := bufCacheDir()
	for _, dep := range deps {
		name, _, _ := strings.Cut(dep, ":") // a dep may pin a label: buf.build/o/r:v1
		commit := commits[name]
		dir := ""
		if commit != "" && cache != "" && validCachePart(name) && validCachePart(commit) {
			matches, _ := filepath.Glob(filepath.Join(cache, "v3", "modules", "*", filepath.FromSlash(name), commit, "files"))
			for _, m := range matches {
				if st, err := os.Stat(m); err == nil && st.IsDir() {
					dir = m
					break
				}
			}
		}
		if dir == "" {
			cfg.missingDeps = append(cfg.missingDeps, name)
			continue
		}
		cfg.depDirs = append(cfg.depDirs, dir)
	}
	return nil
}

// validCachePart refuses names that would lead out of the cache or act
// as glob patterns.
func validCachePart(s string) bool {
	c := path.Clean(s)
	return c == s && !path.IsAbs(s) && c != ".." && !strings.HasPrefix(c, "../") && !strings.ContainsAny(s, "*?[\\")
}

// bufCacheDir is buf's cache directory: $BUF_CACHE_DIR, else buf under
// $XDG_CACHE_HOME or ~/.cache (%LocalAppData% on Windows). Empty when none
// can be found.
func bufCacheDir() string {
	if d := os.Getenv("BUF_CACHE_DIR"); d != "" {
		return d
	}
	base := ""
	if runtime.GOOS == "windows" {
		base = os.Getenv("LOCALAPPDATA")
	} else if x := os.Getenv("XDG_CACHE_HOME"); x != "" {
		base = x
	} else if h, err := os.UserHomeDir(); err == nil {
		base = filepath.Join(h, ".cache")
	}
	if base == "" {
		return ""
	}
	return filepath.Join(base, "buf")
}
