package protocheck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/plugkit/plugkit/internal/testutil"
)

// bufGoldenPath holds what buf v1.75 reports for every ruleCase, one JSON
// object per case: {"case": name, "findings": [...]}. It is written by
// TestRegenerateBufGolden when PROTOCHECK_REGEN_BUF=1 and buf is on PATH;
// ordinary test runs only read it.
const bufGoldenPath = "testdata/buf-rules.golden.jsonl"

func writeTree(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, src := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRegenerateBufGolden runs buf on every ruleCase and records its output.
func TestRegenerateBufGolden(t *testing.T) {
	if os.Getenv("PROTOCHECK_REGEN_BUF") != "1" {
		t.Skip("set PROTOCHECK_REGEN_BUF=1 (needs buf on PATH) to rewrite " + bufGoldenPath)
	}
	bufPath, err := exec.LookPath("buf")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	names := make([]string, 0, len(ruleCases))
	byName := map[string]ruleCase{}
	for _, c := range ruleCases {
		names = append(names, c.name)
		byName[c.name] = c
	}
	sort.Strings(names)
	for _, name := range names {
		c := byName[name]
		dir := testutil.TempDir(t)
		writeTree(t, filepath.Join(dir, "old"), c.old)
		writeTree(t, filepath.Join(dir, "new"), c.new)
		cfg := fmt.Sprintf("version: v2\nbreaking:\n  use: [%s]\n", c.rule)
		writeTree(t, filepath.Join(dir, "new"), map[string]string{"buf.yaml": cfg})
		writeTree(t, filepath.Join(dir, "old"), map[string]string{"buf.yaml": cfg})
		cmd := exec.Command(bufPath, "breaking", "new", "--against", "old", "--error-format", "json")
		cmd.Dir = dir
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		if err != nil && cmd.ProcessState.ExitCode() != 100 {
			t.Fatalf("%s: buf: %v\n%s", name, err, stderr.String())
		}
		findings := []json.RawMessage{}
		for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
			if line != "" {
				findings = append(findings, json.RawMessage(line))
			}
		}
		rec, _ := json.Marshal(struct {
			Case     string            `json:"case"`
			Findings []json.RawMessage `json:"findings"`
		}{name, findings})
		out.Write(rec)
		out.WriteByte('\n')
	}
	if err := os.WriteFile(bufGoldenPath, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}
