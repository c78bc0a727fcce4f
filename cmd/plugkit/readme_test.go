package main

import (
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestReadmeNamesEveryCommand keeps README.md's CLI true to the command
// list: the package table's cmd/plugkit row names every command and no
// other, and the CLI section shows each with `go run ./cmd/plugkit NAME`.
func TestReadmeNamesEveryCommand(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(raw)
	var row string
	for _, l := range strings.Split(readme, "\n") {
		if strings.HasPrefix(l, "| `cmd/plugkit` |") {
			row = l
		}
	}
	if row == "" {
		t.Fatal("README.md has no package-table row for `cmd/plugkit`")
	}
	named := map[string]bool{}
	for _, m := range regexp.MustCompile("`([a-z]+)`").FindAllStringSubmatch(strings.TrimPrefix(row, "| `cmd/plugkit` |"), -1) {
		named[m[1]] = true
	}
	for _, name := range slices.Sorted(maps.Keys(commands)) {
		if !named[name] {
			t.Errorf("README.md's cmd/plugkit row does not name the command %q: add `%s` to it", name, name)
		}
		if !strings.Contains(readme, "go run ./cmd/plugkit "+name+" ") && !strings.Contains(readme, "go run ./cmd/plugkit "+name+"\n") {
			t.Errorf("README.md's CLI section has no line `go run ./cmd/plugkit %s ...`: add one with its usage", name)
		}
	}
	for name := range named {
		if _, ok := commands[name]; !ok {
			t.Errorf("README.md's cmd/plugkit row names %q, which is no command of plugkit: remove it", name)
		}
	}
}
