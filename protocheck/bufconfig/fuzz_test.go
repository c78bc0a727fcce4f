package bufconfig

import (
	"path"
	"reflect"
	"strings"
	"testing"

	"github.com/plugkit/plugkit/internal/testutil"
	"github.com/plugkit/plugkit/protocheck/ruleset"
)

// checkLayout asserts what every configuration Parse accepts
// must satisfy: a known version, module directories and paths that are
// clean, relative and inside the input, modules that do not overlap,
// rules that exist, and the same result when parsed again.
func checkLayout(t *testing.T, files map[string][]byte, cfg *Config) {
	t.Helper()
	switch cfg.Version {
	case "v1beta1", "v1", "v2":
	default:
		t.Fatalf("accepted version %q", cfg.Version)
	}
	if cfg.File != BufYAML && cfg.File != BufWorkYAML {
		t.Fatalf("File = %q", cfg.File)
	}
	if cfg.File == BufWorkYAML && cfg.Version != "v1" {
		t.Fatalf("buf.work.yaml of version %q accepted", cfg.Version)
	}
	inside := func(what, p string) {
		if p == "" || path.Clean(p) != p || path.IsAbs(p) || p == ".." || strings.HasPrefix(p, "../") {
			t.Fatalf("%s %q is not a clean relative path inside the input", what, p)
		}
	}
	for i, m := range cfg.Modules {
		inside("module dir", m.Dir)
		for _, e := range m.Excludes {
			inside("exclude", e)
		}
		for _, p := range m.Breaking.Ignore {
			inside("ignore", p)
		}
		for id, ps := range m.Breaking.IgnoreOnly {
			if _, err := ruleset.SelectRules([]string{id}, nil); err != nil {
				t.Fatalf("ignore_only key %q accepted: %v", id, err)
			}
			for _, p := range ps {
				inside("ignore_only path", p)
			}
		}
		if _, err := ruleset.SelectRules(m.Breaking.Use, m.Breaking.Except); err != nil {
			t.Fatalf("breaking rules accepted: %v", err)
		}
		for _, o := range cfg.Modules[i+1:] {
			if _, in := relTo(m.Dir, o.Dir); in {
				t.Fatalf("module %q contains module %q", m.Dir, o.Dir)
			}
			if _, in := relTo(o.Dir, m.Dir); in {
				t.Fatalf("module %q contains module %q", o.Dir, m.Dir)
			}
		}
	}
	for _, p := range []string{"a.proto", "x/b.proto", "x/y/c.proto"} {
		if m, rel := cfg.moduleOf(p); m != nil {
			if back, ok := relTo(m.Dir, p); !ok || back != rel {
				t.Fatalf("moduleOf(%q) = %q, %q", p, m.Dir, rel)
			}
		}
	}
	again, err := Parse(files)
	if err != nil || !reflect.DeepEqual(again, cfg) {
		t.Fatalf("parsing again gives %+v, %v; first %+v", again, err, cfg)
	}
}

// FuzzBufYAML parses buf.yaml files (with a buf.lock beside them): no
// input panics, and what is accepted is well-formed (checkLayout).
func FuzzBufYAML(f *testing.F) {
	f.Setenv("BUF_CACHE_DIR", testutil.TempDir(f))
	for _, seed := range []struct{ yaml, lock string }{
		{"version: v2\n", ""},
		{"version: v2\nmodules:\n  - path: proto\n    excludes: [proto/internal]\n  - path: x\nbreaking:\n  use: [FILE]\n  except: [FIELD_SAME_NAME]\n  ignore: [proto/a.proto]\n  ignore_only:\n    WIRE: [x/y]\n", ""},
		{"version: v1\nbuild:\n  excludes: [vendor]\nbreaking:\n  use: [WIRE_JSON]\n  ignore_unstable_packages: true\n", ""},
		{"version: v1beta1\nbuild:\n  roots: [a, b]\n  excludes: [a/z]\n", ""},
		{"version: v2\ndeps:\n  - buf.build/acme/dep\n", "version: v2\ndeps:\n  - name: buf.build/acme/dep\n    commit: 0123456789abcdef\n"},
		{"version: v1\ndeps: [buf.build/a/b]\n", "version: v1\ndeps:\n  - remote: buf.build\n    owner: a\n    repository: b\n    commit: 01234567-89ab\n"},
		{"version: v2\nmodules:\n  - path: ../out\n", ""},
		{"version: v2\nmodules:\n  - path: a\n  - path: a/b\n", ""},
		{"version: [", ""},
		{"{\"version\":\"v2\",\"breaking\":{\"use\":[\"FILE\"]}}", ""},
	} {
		f.Add([]byte(seed.yaml), []byte(seed.lock))
	}
	f.Fuzz(func(t *testing.T, data, lock []byte) {
		files := map[string][]byte{BufYAML: data, "a.proto": nil, "x/b.proto": nil}
		if len(lock) > 0 {
			files[BufLock] = lock
		}
		cfg, err := Parse(files)
		if err != nil {
			if cfg != nil {
				t.Fatalf("error %v with a configuration %+v", err, cfg)
			}
			return
		}
		if cfg == nil {
			t.Fatal("no configuration and no error for a buf.yaml")
		}
		checkLayout(t, files, cfg)
	})
}

// FuzzBufWorkYAML parses buf.work.yaml files with a module buf.yaml in one
// of their directories: no input panics, and what is accepted is
// well-formed (checkLayout).
func FuzzBufWorkYAML(f *testing.F) {
	f.Setenv("BUF_CACHE_DIR", testutil.TempDir(f))
	for _, seed := range []struct{ work, mod string }{
		{"version: v1\ndirectories: [x]\n", "version: v1\nbreaking:\n  use: [FILE]\n"},
		{"version: v1\ndirectories: [x, y]\n", ""},
		{"version: v1\ndirectories: [x, x/y]\n", ""},
		{"version: v1\ndirectories: [../x]\n", ""},
		{"version: v2\ndirectories: [x]\n", ""},
		{"version: v1\ndirectories: []\n", ""},
		{"version: v1\ndirectories: [x]\n", "version: v2\n"},
		{"version: v1\ndirectories: [x]\n", "version: v1beta1\nbuild:\n  roots: [r]\n"},
		{"version: v1\ndirectories: [x]\n", "version: v1\ndeps: [buf.build/a/b]\n"},
	} {
		f.Add([]byte(seed.work), []byte(seed.mod))
	}
	f.Fuzz(func(t *testing.T, work, mod []byte) {
		files := map[string][]byte{BufWorkYAML: work, "x/b.proto": nil}
		if len(mod) > 0 {
			files["x/"+BufYAML] = mod
		}
		cfg, err := Parse(files)
		if err != nil {
			if cfg != nil {
				t.Fatalf("error %v with a configuration %+v", err, cfg)
			}
			return
		}
		if cfg == nil || cfg.File != BufWorkYAML {
			t.Fatalf("buf.work.yaml gave %+v", cfg)
		}
		checkLayout(t, files, cfg)
	})
}
