//go:build corpus

package protocheck

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/plugkit/plugkit/protocheck/load"
	"github.com/plugkit/plugkit/protocheck/report"
	"github.com/plugkit/plugkit/protocheck/ruleset"
)

// bufBreakingExceptions lists the fixtures and categories where plugkit's
// buf-compatible output deliberately differs from buf v1.75, with the
// reason (docs/protocheck.md, "Parity with buf" repeats them). The test
// checks that each listed case still differs, so an exception that no
// longer applies is noticed and removed.
var bufBreakingExceptions = map[string]string{}

// bufText renders buf's JSON findings in buf's text format.
func bufText(t *testing.T, jsonl []byte) string {
	t.Helper()
	var out strings.Builder
	for _, line := range bytes.Split(jsonl, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var f bufFinding
		if err := json.Unmarshal(line, &f); err != nil {
			t.Fatal(err)
		}
		p := f.Path
		if p == "" {
			p = "<input>"
		}
		fmt.Fprintf(&out, "%s:%d:%d:%s\n", p, f.StartLine, f.StartColumn, f.Message)
	}
	return out.String()
}

// lineDiff lists the lines only plugkit printed ("-") and only buf printed
// ("+"), or says that the same lines came in another order.
func lineDiff(got, want string) string {
	count := map[string]int{}
	for _, l := range strings.SplitAfter(want, "\n") {
		count[l]++
	}
	var b strings.Builder
	for _, l := range strings.SplitAfter(got, "\n") {
		if count[l] > 0 {
			count[l]--
			continue
		}
		if l != "" {
			b.WriteString("- plugkit " + l)
		}
	}
	for _, l := range strings.SplitAfter(want, "\n") {
		if count[l] > 0 && l != "" {
			count[l]--
			b.WriteString("+ buf     " + l)
		}
	}
	if b.Len() == 0 {
		return "the same lines in another order:\nplugkit:\n" + got + "buf:\n" + want
	}
	return b.String()
}

// bufBreakingRun checks one fixture directory the way
// `plugkit proto breaking current --against previous --buf-compat
// --buf-names --use CATEGORY` does, and returns the JSON and text output and
// the exit code.
func bufBreakingRun(t *testing.T, dir, category string) (jsonOut, textOut string, rc int) {
	t.Helper()
	ctx := context.Background()
	loadSide := func(sub string) (*load.Image, []report.Finding) {
		img, err := load.Load(ctx, filepath.Join(dir, sub), load.LoadOptions{})
		if err == nil {
			return img, nil
		}
		var ce *load.CompileError
		if !errors.As(err, &ce) {
			t.Fatalf("%s: %v", sub, err)
		}
		return nil, ce.Findings()
	}
	oldImg, oldBad := loadSide("previous")
	newImg, newBad := loadSide("current")
	var findings []report.Finding
	switch {
	case newBad != nil: // as plugkit proto breaking --buf-compat: the input's problems first
		findings = newBad
	case oldBad != nil:
		findings = oldBad
	default:
		var err error
		findings, err = Breaking(oldImg, newImg, Options{Use: []string{category}, BufCompat: true, BufNames: true})
		if err != nil {
			t.Fatal(err)
		}
	}
	var j, x bytes.Buffer
	if err := report.Write(&j, report.FormatJSON, "", findings); err != nil {
		t.Fatal(err)
	}
	if err := report.Write(&x, report.FormatText, "", findings); err != nil {
		t.Fatal(err)
	}
	rc = 0
	if report.Failing(findings) {
		rc = 100
	}
	return j.String(), x.String(), rc
}

// TestCorpusBufBreakingFixtures runs every buf-breaking fixture of the shared
// corpus under every category and compares plugkit's JSON and text output,
// byte for byte and in order, and its exit code with what buf v1.75 printed.
func TestCorpusBufBreakingFixtures(t *testing.T) {
	root := filepath.Join(sharedDir(t), "corpus", "buf-breaking")
	fixtures, err := os.ReadDir(root)
	if err != nil {
		t.Fatalf("the buf-breaking corpus is missing: %v", err)
	}
	if len(fixtures) < 50 {
		t.Fatalf("the buf-breaking corpus has %d fixtures, want the 54 of buf v1.75", len(fixtures))
	}
	seen := map[string]bool{}
	for _, fx := range fixtures {
		if !fx.IsDir() {
			continue
		}
		for _, cat := range []string{ruleset.CategoryFILE, ruleset.CategoryPACKAGE, ruleset.CategoryWIREJSON, ruleset.CategoryWIRE} {
			name := fx.Name() + "/" + cat
			t.Run(name, func(t *testing.T) {
				dir := filepath.Join(root, fx.Name())
				want, err := os.ReadFile(filepath.Join(dir, "buf-expected", cat+".jsonl"))
				if err != nil {
					t.Fatal(err)
				}
				rcText, err := os.ReadFile(filepath.Join(dir, "buf-expected", cat+".rc"))
				if err != nil {
					t.Fatal(err)
				}
				wantRC, err := strconv.Atoi(strings.TrimSpace(string(rcText)))
				if err != nil {
					t.Fatal(err)
				}
				gotJSON, gotText, gotRC := bufBreakingRun(t, dir, cat)
				same := gotJSON == string(want) && gotText == bufText(t, want) && gotRC == wantRC
				if reason, ok := bufBreakingExceptions[name]; ok {
					seen[name] = true
					if same {
						t.Errorf("listed as a deliberate difference (%s) but now equal to buf: remove it from bufBreakingExceptions and docs/protocheck.md", reason)
					} else {
						t.Logf("deliberate difference from buf: %s", reason)
					}
					return
				}
				if gotRC != wantRC {
					t.Errorf("exit code %d, buf %d", gotRC, wantRC)
				}
				if gotJSON != string(want) {
					t.Errorf("JSON output differs from buf's:\n%s", lineDiff(gotJSON, string(want)))
				} else if wt := bufText(t, want); gotText != wt {
					t.Errorf("text output differs from buf's:\n%s", lineDiff(gotText, wt))
				}
			})
		}
	}
	for name := range bufBreakingExceptions {
		if !seen[name] {
			t.Errorf("bufBreakingExceptions lists %s, which is not in the corpus", name)
		}
	}
}
