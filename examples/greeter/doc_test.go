package greeter_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// snippet is a fenced block of docs/your-own-kind.md preceded by a
// "<!-- from: PATH -->" marker: it must appear, verbatim, in PATH.
var snippet = regexp.MustCompile("(?s)<!-- from: (\\S+) -->\n```[a-z]*\n(.*?)```")

// TestDocSnippetsMatchCode keeps docs/your-own-kind.md true: every excerpt
// marked with its source file must be cut from that file as it is now.
func TestDocSnippetsMatchCode(t *testing.T) {
	root := filepath.Join("..", "..")
	doc, err := os.ReadFile(filepath.Join(root, "docs", "your-own-kind.md"))
	if err != nil {
		t.Fatal(err)
	}
	matches := snippet.FindAllStringSubmatch(string(doc), -1)
	if len(matches) < 8 {
		t.Fatalf("found %d marked excerpts in docs/your-own-kind.md; the page has more", len(matches))
	}
	for _, m := range matches {
		path, text := m[1], m[2]
		src, err := os.ReadFile(filepath.Join(root, path))
		if err != nil {
			t.Errorf("excerpt from %s: %v", path, err)
			continue
		}
		if !strings.Contains(string(src), text) {
			t.Errorf("docs/your-own-kind.md quotes %s, but the file no longer holds:\n%s", path, text)
		}
	}
}
