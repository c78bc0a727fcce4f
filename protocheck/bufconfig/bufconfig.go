package bufconfig

import (
	"fmt"
	"path"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/plugkit/plugkit/protocheck/ruleset"
)

// Names of buf's configuration files that Load honours in an input's root.
const (
	BufYAML     = "buf.yaml"      // a module (v1beta1, v1) or a workspace of modules (v2)
	BufWorkYAML = "buf.work.yaml" // a v1 workspace: directories that each hold a module
)

// Config is what protocheck takes from an input's buf.yaml or
// buf.work.yaml: where its modules are, what they exclude, each module's
// breaking configuration and the dependencies. Load fills Image.Buf with
// it.
type Config struct {
	// File is the configuration file that defined the layout, relative to
	// the input: "buf.yaml" or "buf.work.yaml".
	File string
	// Version is the file's version: "v1beta1", "v1" or "v2".
	Version string
	// Modules are the input's modules. Every .proto file of the input
	// belongs to the module whose Dir contains it (files outside every
	// module are not part of the input, as in buf).
	Modules []*Module
	// Deps are the modules the configuration depends on, e.g.
	// "buf.build/gogo/protobuf". Load finds them in buf's module cache
	// through buf.lock; -I directories supply the others.
	Deps []string

	depDirs     []string // the deps' directories in buf's module cache
	missingDeps []string // the deps not found there
}

// DepDirs returns the directories of the deps found in buf's module cache,
// to search for imports.
func (cfg *Config) DepDirs() []string { return cfg.depDirs }

// MissingDeps returns the deps that neither buf.lock and buf's module
// cache supplied, e.g. "buf.build/gogo/protobuf".
func (cfg *Config) MissingDeps() []string { return cfg.missingDeps }

// Module is one module of a Config.
type Module struct {
	// Dir is the module's root relative to the input, "." for the input
	// itself. File paths inside the module (import paths) are relative to
	// it.
	Dir string
	// Excludes are directories, relative to Dir, whose files are left out.
	Excludes []string
	// Breaking is the module's breaking configuration.
	Breaking Breaking
}

// Breaking is the breaking section of a buf configuration. Paths are
// relative to the module's root, as buf resolves them.
type Breaking struct {
	// Use and Except list categories and rule IDs; an empty Use means buf's
	// default, FILE.
	Use, Except []string
	// Ignore lists files and directories whose findings are dropped.
	Ignore []string
	// IgnoreOnly maps a rule ID or category to files and directories whose
	// findings of that rule are dropped.
	IgnoreOnly map[string][]string
	// IgnoreUnstablePackages drops findings about files whose package ends
	// in an alpha, beta or test version (foo.v1alpha1, foo.v1beta2,
	// foo.v1test).
	IgnoreUnstablePackages bool
}

// yamlBreaking is the breaking section as written in the files.
type yamlBreaking struct {
	Use                    []string            `yaml:"use"`
	Except                 []string            `yaml:"except"`
	Ignore                 []string            `yaml:"ignore"`
	IgnoreOnly             map[string][]string `yaml:"ignore_only"`
	IgnoreUnstablePackages bool                `yaml:"ignore_unstable_packages"`
}

// yamlBufFile is a buf.yaml of any version, or a buf.work.yaml.
type yamlBufFile struct {
	Version string `yaml:"version"`
	Build   struct {
		Roots    []string `yaml:"roots"`
		Excludes []string `yaml:"excludes"`
	} `yaml:"build"`
	Modules []struct {
		Path     string        `yaml:"path"`
		Excludes []string      `yaml:"excludes"`
		Breaking *yamlBreaking `yaml:"breaking"`
	} `yaml:"modules"`
	Breaking    *yamlBreaking `yaml:"breaking"`
	Directories []string      `yaml:"directories"`
	Deps        []string      `yaml:"deps"`
}

func parseBufFile(name string, data []byte) (*yamlBufFile, error) {
	var f yamlBufFile
	if err := yaml.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("%s: %w (fix the YAML or remove the file)", name, err)
	}
	return &f, nil
}

// cleanRel checks a path from a configuration file: relative, inside the
// input, slash-separated. It returns the cleaned path ("." for the root).
func cleanRel(file, what, p string) (string, error) {
	c := path.Clean(strings.TrimSpace(p))
	if p == "" || path.IsAbs(c) || c == ".." || strings.HasPrefix(c, "../") {
		return "", fmt.Errorf("%s: %s %q must be a relative path inside the input", file, what, p)
	}
	return c, nil
}

// relTo makes p (relative to the configuration file) relative to dir, and
// reports whether p is inside dir.
func relTo(dir, p string) (string, bool) {
	if dir == "." {
		return p, true
	}
	if p == dir {
		return ".", true
	}
	if rest, ok := strings.CutPrefix(p, dir+"/"); ok {
		return rest, true
	}
	return "", false
}

// toBreaking converts a breaking section whose paths are relative to the
// configuration file's directory base into one relative to module dir.
// Paths outside the module are dropped (they belong to another module).
func toBreaking(file, base, dir string, y *yamlBreaking) (Breaking, error) {
	if y == nil {
		return Breaking{}, nil
	}
	b := Breaking{Use: y.Use, Except: y.Except, IgnoreUnstablePackages: y.IgnoreUnstablePackages}
	if _, err := ruleset.SelectRules(b.Use, b.Except); err != nil {
		return b, fmt.Errorf("%s: breaking: %w", file, err)
	}
	conv := func(what string, ps []string) ([]string, error) {
		var out []string
		for _, p := range ps {
			c, err := cleanRel(file, what, p)
			if err != nil {
				return nil, err
			}
			c = path.Join(base, c)
			if rel, ok := relTo(dir, c); ok {
				out = append(out, rel)
			}
		}
		return out, nil
	}
	var err error
	if b.Ignore, err = conv("breaking.ignore path", y.Ignore); err != nil {
		return b, err
	}
	for id, ps := range y.IgnoreOnly {
		if _, err := ruleset.SelectRules([]string{id}, nil); err != nil {
			return b, fmt.Errorf("%s: breaking.ignore_only: %w", file, err)
		}
		rel, err := conv("breaking.ignore_only path", ps)
		if err != nil {
			return b, err
		}
		if len(rel) > 0 {
			if b.IgnoreOnly == nil {
				b.IgnoreOnly = map[string][]string{}
			}
			b.IgnoreOnly[id] = rel
		}
	}
	return b, nil
}

// Parse reads the buf configuration at the root of an input from its
// files (path relative to the input to content: the configuration files,
// with a buf.lock beside a buf.yaml that has deps; other files are
// ignored). It returns nil when the root has neither buf.work.yaml nor
// buf.yaml. Deps are looked up in buf's module cache through buf.lock.
func Parse(files map[string][]byte) (*Config, error) {
	if data, ok := files[BufWorkYAML]; ok {
		return parseBufWork(files, data)
	}
	data, ok := files[BufYAML]
	if !ok {
		return nil, nil
	}
	f, err := parseBufFile(BufYAML, data)
	if err != nil {
		return nil, err
	}
	cfg := &Config{File: BufYAML, Version: f.Version}
	switch f.Version {
	case "v2":
		mods := f.Modules
		if len(mods) == 0 {
			mods = append(mods, struct {
				Path     string        `yaml:"path"`
				Excludes []string      `yaml:"excludes"`
				Breaking *yamlBreaking `yaml:"breaking"`
			}{Path: "."})
		}
		for _, m := range mods {
			p := m.Path
			if p == "" {
				p = "."
			}
			dir, err := cleanRel(BufYAML, "module path", p)
			if err != nil {
				return nil, err
			}
			mod := &Module{Dir: dir}
			for _, e := range m.Excludes {
				c, err := cleanRel(BufYAML, "module excludes path", e)
				if err != nil {
					return nil, err
				}
				rel, ok := relTo(dir, c)
				if !ok {
					return nil, fmt.Errorf("%s: excludes path %q is not inside module %q", BufYAML, e, dir)
				}
				mod.Excludes = append(mod.Excludes, rel)
			}
			// A module's own breaking section replaces the top-level one.
			br := f.Breaking
			if m.Breaking != nil {
				br = m.Breaking
			}
			if mod.Breaking, err = toBreaking(BufYAML, ".", dir, br); err != nil {
				return nil, err
			}
			cfg.Modules = append(cfg.Modules, mod)
		}
		if err := cfg.resolveDeps(f.Deps, BufLock, files[BufLock]); err != nil {
			return nil, err
		}
	case "v1", "v1beta1", "":
		if f.Version == "" {
			return nil, fmt.Errorf("%s: no version (write version: v2, or v1 for the older layout)", BufYAML)
		}
		mods, err := v1Modules(BufYAML, ".", f)
		if err != nil {
			return nil, err
		}
		cfg.Modules = mods
		if err := cfg.resolveDeps(f.Deps, BufLock, files[BufLock]); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("%s: unknown version %q (use v1beta1, v1 or v2)", BufYAML, f.Version)
	}
	return checkedConfig(cfg)
}

// v1Modules turns a v1 or v1beta1 buf.yaml in directory base (relative to
// the input) into its modules: one at base, or one per v1beta1 build root.
func v1Modules(file, base string, f *yamlBufFile) ([]*Module, error) {
	roots := []string{"."}
	if f.Version == "v1beta1" && len(f.Build.Roots) > 0 {
		roots = f.Build.Roots
	}
	var mods []*Module
	for _, r := range roots {
		root, err := cleanRel(file, "build.roots entry", r)
		if err != nil {
			return nil, err
		}
		dir := path.Join(base, root)
		mod := &Module{Dir: dir}
		for _, e := range f.Build.Excludes {
			c, err := cleanRel(file, "build.excludes path", e)
			if err != nil {
				return nil, err
			}
			if rel, ok := relTo(root, c); ok {
				mod.Excludes = append(mod.Excludes, rel)
			}
		}
		// v1 paths in breaking.ignore are relative to the module root.
		if mod.Breaking, err = toBreaking(file, ".", ".", f.Breaking); err != nil {
			return nil, err
		}
		mods = append(mods, mod)
	}
	return mods, nil
}

// parseBufWork reads a v1 buf.work.yaml: each directory is a module,
// configured by its own buf.yaml if it has one.
func parseBufWork(files map[string][]byte, data []byte) (*Config, error) {
	w, err := parseBufFile(BufWorkYAML, data)
	if err != nil {
		return nil, err
	}
	if w.Version != "v1" {
		return nil, fmt.Errorf("%s: version %q (buf.work.yaml has only version v1)", BufWorkYAML, w.Version)
	}
	if len(w.Directories) == 0 {
		return nil, fmt.Errorf("%s: no directories (list the module directories)", BufWorkYAML)
	}
	cfg := &Config{File: BufWorkYAML, Version: w.Version}
	for _, d := range w.Directories {
		dir, err := cleanRel(BufWorkYAML, "directories entry", d)
		if err != nil {
			return nil, err
		}
		name := path.Join(dir, BufYAML)
		data, ok := files[name]
		if !ok {
			cfg.Modules = append(cfg.Modules, &Module{Dir: dir})
			continue
		}
		f, err := parseBufFile(name, data)
		if err != nil {
			return nil, err
		}
		if f.Version != "v1" && f.Version != "v1beta1" {
			return nil, fmt.Errorf("%s: version %q in a buf.work.yaml workspace (use v1)", name, f.Version)
		}
		mods, err := v1Modules(name, dir, f)
		if err != nil {
			return nil, err
		}
		cfg.Modules = append(cfg.Modules, mods...)
		lock := path.Join(dir, BufLock)
		if err := cfg.resolveDeps(f.Deps, lock, files[lock]); err != nil {
			return nil, err
		}
	}
	return checkedConfig(cfg)
}

// checkedConfig returns cfg, or nil and the error when its modules
// overlap.
func checkedConfig(cfg *Config) (*Config, error) {
	if err := checkModules(cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}

// checkModules refuses overlapping module directories.
func checkModules(cfg *Config) error {
	for i, a := range cfg.Modules {
		for _, b := range cfg.Modules[i+1:] {
			if _, in := relTo(a.Dir, b.Dir); in {
				return fmt.Errorf("%s: module %q contains module %q (modules must not overlap)", cfg.File, a.Dir, b.Dir)
			}
			if _, in := relTo(b.Dir, a.Dir); in {
				return fmt.Errorf("%s: module %q contains module %q (modules must not overlap)", cfg.File, b.Dir, a.Dir)
			}
		}
	}
	return nil
}

// moduleOf returns the module holding the input file p (relative to the
// input) and p relative to the module, or nil when no module holds p or an
// exclude of its module does.
func (cfg *Config) moduleOf(p string) (*Module, string) {
	for _, m := range cfg.Modules {
		rel, ok := relTo(m.Dir, p)
		if !ok {
			continue
		}
		if HasPath(m.Excludes, rel) {
			return nil, ""
		}
		return m, rel
	}
	return nil, ""
}

// HasPath reports whether one of list is p or a directory above it.
func HasPath(list []string, p string) bool {
	for _, l := range list {
		if _, ok := relTo(l, p); ok {
			return true
		}
	}
	return false
}

// IsConfigFile reports whether an input file is a buf configuration file
// that Parse reads (buf.yaml, buf.work.yaml, buf.lock).
func IsConfigFile(p string) bool {
	base := path.Base(p)
	return base == BufYAML || base == BufWorkYAML || base == BufLock
}

// Layout maps the input's .proto files (relative to the input) to import
// paths of their modules, leaving out excluded files and files outside
// every module. dirs gets each import path's module directory.
func (cfg *Config) Layout(files map[string][]byte) (sources map[string][]byte, dirs map[string]string, err error) {
	sources = map[string][]byte{}
	dirs = map[string]string{}
	names := make([]string, 0, len(files))
	for p := range files {
		if strings.HasSuffix(p, ".proto") {
			names = append(names, p)
		}
	}
	sort.Strings(names)
	for _, p := range names {
		m, rel := cfg.moduleOf(p)
		if m == nil {
			continue
		}
		if prev, dup := dirs[rel]; dup {
			return nil, nil, fmt.Errorf("%s: file %q is in module %q and in module %q (import paths must be unique across modules)", cfg.File, rel, prev, m.Dir)
		}
		sources[rel] = files[p]
		dirs[rel] = m.Dir
	}
	if len(sources) == 0 {
		return nil, nil, fmt.Errorf("%s: no .proto files in its modules", cfg.File)
	}
	return sources, dirs, nil
}

// UnstablePackage reports whether a package's last component is an alpha,
// beta or test version (v1alpha1, v1p1beta2, v2test, v1testfoo), as buf's
// ignore_unstable_packages understands it. Stable versions (v1) and
// packages without a version component are stable.
func UnstablePackage(pkg string) bool {
	i := strings.LastIndexByte(pkg, '.')
	if i < 0 {
		return false
	}
	v, ok := strings.CutPrefix(pkg[i+1:], "v")
	if !ok {
		return false
	}
	if major, _, ok := strings.Cut(v, "test"); ok {
		return positive(major)
	}
	alpha, beta := strings.Contains(v, "alpha"), strings.Contains(v, "beta")
	if alpha == beta {
		return false // neither (stable) or both (not a version)
	}
	level := "alpha"
	if beta {
		level = "beta"
	}
	head, minor, _ := strings.Cut(v, level)
	if minor != "" && !positive(minor) {
		return false
	}
	major, patch, hasPatch := strings.Cut(head, "p")
	if hasPatch && !positive(patch) {
		return false
	}
	return positive(major)
}

// positive reports whether s is a decimal number of at least 1.
func positive(s string) bool {
	if s == "" || len(s) > 9 {
		return false
	}
	n := 0
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
		n = n*10 + int(r-'0')
	}
	return n >= 1
}
