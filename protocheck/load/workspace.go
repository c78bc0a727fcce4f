package load

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/plugkit/plugkit/protocheck/bufconfig"
)

// configData returns the data of the Config option: the file it names
// (relative to Dir), or the option's text itself when it is inline YAML or
// JSON (it starts with "{", spans lines or holds "version:"). Nil means no
// override.
func (o LoadOptions) configData() ([]byte, error) {
	c := o.Config
	if c == "" {
		return nil, nil
	}
	if strings.HasPrefix(strings.TrimSpace(c), "{") || strings.ContainsAny(c, "\n") || strings.Contains(c, "version:") {
		return []byte(c), nil
	}
	name := c
	if o.Dir != "" && !filepath.IsAbs(name) {
		name = filepath.Join(o.Dir, name)
	}
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("configuration %q is neither a readable file nor inline YAML or JSON (give a buf.yaml file, or its content such as '{\"version\":\"v2\"}'): %w", c, err)
	}
	return data, nil
}

// parentWorkspace finds the workspace above dir of which dir is a module
// (bufconfig.FindParent) and reads the other modules' files: it returns
// the module's configuration rooted at the input and, by import path, the
// files of the other modules, which the input may import. Without one it
// returns nil.
func parentWorkspace(dir string, workOnly bool) (*bufconfig.Config, map[string][]byte) {
	root, cfg, target := bufconfig.FindParent(dir, workOnly)
	if cfg == nil {
		return nil, nil
	}
	workspace := map[string][]byte{}
	for _, m := range cfg.Modules {
		if m == target {
			continue
		}
		mfiles, err := readDir(m.Dir, filepath.Join(root, filepath.FromSlash(m.Dir)), LoadOptions{})
		if err != nil {
			continue // a module without files imports nothing
		}
		for p, data := range mfiles {
			if strings.HasSuffix(p, ".proto") && !bufconfig.HasPath(m.Excludes, p) {
				workspace[p] = data
			}
		}
	}
	name := cfg.File
	if abs, err := filepath.Abs(dir); err == nil {
		if rel, err := filepath.Rel(abs, filepath.Join(root, filepath.FromSlash(cfg.File))); err == nil {
			name = filepath.ToSlash(rel)
		}
	}
	return cfg.ForModule(target, name), workspace
}
