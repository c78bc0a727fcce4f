package protocheck

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/plugkit/plugkit/protocheck/load"
	"github.com/plugkit/plugkit/protocheck/report"
	"github.com/plugkit/plugkit/protocheck/ruleset"
)

// bufFinding is one line of buf's --error-format json output.
type bufFinding struct {
	Path        string `json:"path,omitempty"`
	StartLine   int    `json:"start_line"`
	StartColumn int    `json:"start_column"`
	EndLine     int    `json:"end_line"`
	EndColumn   int    `json:"end_column"`
	Type        string `json:"type"`
	Message     string `json:"message"`
}

func toBuf(fs []report.Finding) []bufFinding {
	out := []bufFinding{}
	for _, f := range fs {
		out = append(out, bufFinding{f.Path, f.StartLine, f.StartColumn, f.EndLine, f.EndColumn, f.Type, f.Message})
	}
	return out
}

func mustImage(t testing.TB, name string, files map[string]string) *load.Image {
	t.Helper()
	src := map[string][]byte{}
	for k, v := range files {
		src[k] = []byte(v)
	}
	img, err := load.NewImage(context.Background(), name, src, load.LoadOptions{})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return img
}

func readBufGolden(t *testing.T) map[string][]bufFinding {
	t.Helper()
	f, err := os.Open(bufGoldenPath)
	if err != nil {
		t.Fatalf("reading buf's recorded output: %v (regenerate with PROTOCHECK_REGEN_BUF=1 and buf on PATH)", err)
	}
	defer f.Close()
	out := map[string][]bufFinding{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var rec struct {
			Case     string       `json:"case"`
			Findings []bufFinding `json:"findings"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatal(err)
		}
		for i := range rec.Findings {
			// buf ran on directories "old" and "new"; plugkit reports paths
			// relative to the input root.
			rec.Findings[i].Path = strings.TrimPrefix(strings.TrimPrefix(rec.Findings[i].Path, "new/"), "old/")
		}
		out[rec.Case] = rec.Findings
	}
	return out
}

// TestRulesMatchBuf runs every rule on its positive and negative fixtures
// and compares, with BufCompat and BufNames, with what buf v1.75 reported
// (recorded in testdata): same findings, byte for byte.
func TestRulesMatchBuf(t *testing.T) {
	golden := readBufGolden(t)
	covered := map[string][2]bool{}
	for _, c := range ruleCases {
		t.Run(c.name, func(t *testing.T) {
			want, ok := golden[c.name]
			if !ok {
				t.Fatalf("no recorded buf output for %s (regenerate with PROTOCHECK_REGEN_BUF=1)", c.name)
			}
			if (len(want) > 0) != c.breaks {
				t.Fatalf("fixture expectation breaks=%v disagrees with buf's %d findings", c.breaks, len(want))
			}
			got, err := Breaking(mustImage(t, "old", c.old), mustImage(t, "new", c.new), Options{Use: []string{c.rule}, BufCompat: true, BufNames: true})
			if err != nil {
				t.Fatal(err)
			}
			gj, _ := json.MarshalIndent(toBuf(got), "", " ")
			wj, _ := json.MarshalIndent(want, "", " ")
			if string(gj) != string(wj) {
				t.Errorf("plugkit:\n%s\nbuf:\n%s", gj, wj)
			}
		})
		k := covered[c.rule]
		if c.breaks {
			k[0] = true
		} else {
			k[1] = true
		}
		covered[c.rule] = k
	}
	for _, r := range ruleset.Rules {
		if !isBufCategory(r) {
			continue
		}
		if k := covered[r.ID]; !k[0] || !k[1] {
			t.Errorf("rule %s lacks a positive or negative fixture (%v)", r.ID, k)
		}
	}
}

func isBufCategory(r ruleset.Rule) bool {
	for _, c := range r.Categories {
		switch c {
		case ruleset.CategoryFILE, ruleset.CategoryPACKAGE, ruleset.CategoryWIREJSON, ruleset.CategoryWIRE:
			return true
		}
	}
	return false
}

// TestRulesFullNames checks the one deliberate wording difference from
// buf: with BufNames off, messages, enums and services are named by full
// name; every other field of every finding stays the same.
func TestRulesFullNames(t *testing.T) {
	for _, c := range ruleCases {
		old, new := mustImage(t, "old", c.old), mustImage(t, "new", c.new)
		a, err := Breaking(old, new, Options{Use: []string{c.rule}, BufCompat: true, BufNames: true})
		if err != nil {
			t.Fatal(err)
		}
		b, err := Breaking(old, new, Options{Use: []string{c.rule}, BufCompat: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(a) != len(b) {
			t.Fatalf("%s: %d findings with buf names, %d with full names", c.name, len(a), len(b))
		}
		for i := range a {
			x, y := a[i], b[i]
			x.Message, y.Message = "", ""
			if x != y {
				t.Errorf("%s: findings differ beyond the message: %+v vs %+v", c.name, a[i], b[i])
			}
			if !sameUpToFullNames(a[i].Message, b[i].Message, "a") {
				t.Errorf("%s: messages differ beyond naming:\n buf names:  %s\n full names: %s", c.name, a[i].Message, b[i].Message)
			}

		}
	}
}

// sameUpToFullNames reports whether a message with buf's names and one
// with plugkit's full names say the same: text outside quotes is equal
// (after buf's stray "q" typo is removed) and each quoted name is equal or
// the full form ("pkg.Outer.Inner") of buf's short or nested name.
func sameUpToFullNames(bufMsg, fullMsg, pkg string) bool {
	bufMsg = strings.ReplaceAll(bufMsg, `"q moved from oneof`, `" moved from oneof`)
	bp, fp := strings.Split(bufMsg, `"`), strings.Split(fullMsg, `"`)
	if len(bp) != len(fp) {
		return false
	}
	for i := range bp {
		if bp[i] == fp[i] {
			continue
		}
		if i%2 == 0 || !strings.HasPrefix(fp[i], pkg+".") || !(fp[i] == pkg+"."+bp[i] || strings.HasSuffix(fp[i], "."+bp[i])) {
			return false
		}
	}
	return true
}
