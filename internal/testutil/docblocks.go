package testutil

import (
	"os"
	"strings"
)

// IllustrationMark, on the line before a fenced shell block of README.md or
// docs/*.md, says that no test runs the block's commands as written (they
// need a registry, a cluster, a real release, ...): the docs test only
// checks that bash parses them.
const IllustrationMark = "<!-- illustration -->"

// DocBlock is one fenced shell block (```sh, ```bash or ```shell) of a
// Markdown file.
type DocBlock struct {
	Line         int    // the line of the opening fence, from 1
	Text         string // the lines between the fences
	Illustration bool   // IllustrationMark is on the line before the fence
}

// First returns the block's first line that is neither blank nor a
// comment: the key by which the docs test names the block.
func (b DocBlock) First() string {
	for _, l := range strings.Split(b.Text, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			return l
		}
	}
	return ""
}

// DocShellBlocks returns the fenced shell blocks of the Markdown file at
// path, in order.
func DocShellBlocks(path string) ([]DocBlock, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	lines := strings.Split(string(raw), "\n")
	var blocks []DocBlock
	for i := 0; i < len(lines); i++ {
		fence := strings.TrimSpace(lines[i])
		if !strings.HasPrefix(fence, "```") {
			continue
		}
		lang := strings.TrimPrefix(fence, "```")
		start := i
		var body []string
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
			body = append(body, lines[i])
		}
		if lang != "sh" && lang != "bash" && lang != "shell" {
			continue
		}
		blocks = append(blocks, DocBlock{
			Line:         start + 1,
			Text:         strings.Join(body, "\n") + "\n",
			Illustration: start > 0 && strings.TrimSpace(lines[start-1]) == IllustrationMark,
		})
	}
	return blocks, nil
}
