//go:build corpus

package protocheck

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plugkit/plugkit/protocheck/load"
	"github.com/plugkit/plugkit/protocheck/ruleset"
)

// sharedDir returns the shared corpus directory: $PLUGKIT_SHARED (set by
// make test-corpus) or ../shared relative to the repository root (the
// directory holding go.mod).
func sharedDir(t testing.TB) string {
	t.Helper()
	if d := os.Getenv("PLUGKIT_SHARED"); d != "" {
		return d
	}
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("cannot find the repository root (go.mod) above the test directory")
		}
		dir = parent
	}
	shared := filepath.Join(dir, "..", "shared")
	if _, err := os.Stat(filepath.Join(shared, "corpus", "terraform")); err != nil {
		t.Fatalf("the test corpus is missing: expected %s (a checkout of the shared corpus next to the repository): %v", filepath.Join(shared, "corpus", "terraform"), err)
	}
	return shared
}

// corpusImage loads tfpluginMAJ.MIN.proto as tfpluginMAJ.proto.
func corpusImage(t testing.TB, dir string, maj, min int) *load.Image {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("tfplugin%d.%d.proto", maj, min)))
	if err != nil {
		t.Fatal(err)
	}
	img, err := load.NewImage(context.Background(), fmt.Sprintf("tfplugin%d.%d", maj, min), map[string][]byte{fmt.Sprintf("tfplugin%d.proto", maj): data}, load.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func readJSONL(t testing.TB, path string) []bufFinding {
	t.Helper()
	out := []bufFinding{}
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return out
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var bf bufFinding
		if err := json.Unmarshal(sc.Bytes(), &bf); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, bf)
	}
	return out
}

// TestCorpusParity compares plugkit in buf-compatible mode with buf's
// recorded output on every consecutive tfplugin pair: byte-equal with
// BufNames, and equal except for full names without it.
func TestCorpusParity(t *testing.T) {
	dir := filepath.Join(sharedDir(t), "corpus", "terraform")
	images := map[[2]int]*load.Image{}
	img := func(maj, min int) *load.Image {
		k := [2]int{maj, min}
		if images[k] == nil {
			images[k] = corpusImage(t, dir, maj, min)
		}
		return images[k]
	}
	for _, maj := range []int{5, 6} {
		for min := 0; min < 9; min++ {
			for _, cat := range []string{ruleset.CategoryFILE, ruleset.CategoryWIREJSON, ruleset.CategoryWIRE} {
				name := fmt.Sprintf("%d.%d-to-%d.%d.%s", maj, min, maj, min+1, cat)
				want := readJSONL(t, filepath.Join(dir, "buf-expected", name+".jsonl"))
				got, err := Breaking(img(maj, min), img(maj, min+1), Options{Use: []string{cat}, BufCompat: true, BufNames: true})
				if err != nil {
					t.Fatal(err)
				}
				gj, _ := json.Marshal(toBuf(got))
				wj, _ := json.Marshal(want)
				if string(gj) != string(wj) {
					t.Errorf("%s:\nplugkit %s\nbuf     %s", name, gj, wj)
				}
				full, err := Breaking(img(maj, min), img(maj, min+1), Options{Use: []string{cat}, BufCompat: true})
				if err != nil {
					t.Fatal(err)
				}
				if len(full) != len(got) {
					t.Fatalf("%s: %d findings with full names, %d with buf names", name, len(full), len(got))
				}
				for i := range full {
					if !sameUpToFullNames(got[i].Message, full[i].Message, fmt.Sprintf("tfplugin%d", maj)) {
						t.Errorf("%s: full-name message %q does not map to buf's %q", name, full[i].Message, got[i].Message)
					}
				}

			}
		}
	}
}

// TestCorpusPlugkitMode checks plugkit's own view of the tfplugin history:
// the ServerCapabilities move is one FILE finding with a hint, and no
// WIRE or WIRE_JSON break.
func TestCorpusPlugkitMode(t *testing.T) {
	dir := filepath.Join(sharedDir(t), "corpus", "terraform")
	for _, maj := range []int{5, 6} {
		old, new := corpusImage(t, dir, maj, 3), corpusImage(t, dir, maj, 4)
		for _, cat := range []string{ruleset.CategoryWIREJSON, ruleset.CategoryWIRE} {
			got, err := Breaking(old, new, Options{Use: []string{cat}})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 0 {
				t.Errorf("%d.3->%d.4 %s: want no findings, got %+v", maj, maj, cat, got)
			}
		}
		got, err := Breaking(old, new, Options{Use: []string{ruleset.CategoryFILE}})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].Type != "MESSAGE_NO_DELETE" || got[0].Hint == "" ||
			!strings.Contains(got[0].Message, fmt.Sprintf(`moved to "tfplugin%d.ServerCapabilities"`, maj)) {
			t.Errorf("%d.3->%d.4 FILE: want one MESSAGE_NO_DELETE naming the move, got %+v", maj, maj, got)
		}
	}
}

// TestCorpusWideParity compares with buf's recorded output on distant and
// reversed tfplugin pairs, which exercise many rules at once
// (testdata/buf-corpus-wide; "x6" is tfplugin6.9 saved as tfplugin5.proto).
func TestCorpusWideParity(t *testing.T) {
	dir := filepath.Join(sharedDir(t), "corpus", "terraform")
	loadVersion := func(v string) *load.Image {
		if v == "x6" {
			data, err := os.ReadFile(filepath.Join(dir, "tfplugin6.9.proto"))
			if err != nil {
				t.Fatal(err)
			}
			img, err := load.NewImage(context.Background(), v, map[string][]byte{"tfplugin5.proto": data}, load.LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			return img
		}
		var maj, min int
		fmt.Sscanf(v, "%d.%d", &maj, &min)
		return corpusImage(t, dir, maj, min)
	}
	files, err := filepath.Glob("testdata/buf-corpus-wide/*.jsonl")
	if err != nil || len(files) == 0 {
		t.Fatalf("no recorded outputs: %v", err)
	}
	for _, f := range files {
		base := strings.TrimSuffix(filepath.Base(f), ".jsonl")
		// base is like "5.9-to-5.0.FILE": split the category off the end.
		i := strings.LastIndex(base, ".")
		pair, cat := base[:i], base[i+1:]
		from, to, _ := strings.Cut(pair, "-to-")
		got, err := Breaking(loadVersion(from), loadVersion(to), Options{Use: []string{cat}, BufCompat: true, BufNames: true})
		if err != nil {
			t.Fatal(err)
		}
		gj, _ := json.Marshal(toBuf(got))
		wj, _ := json.Marshal(readJSONL(t, f))
		if string(gj) != string(wj) {
			t.Errorf("%s:\nplugkit %s\nbuf     %s", base, gj, wj)
		}
	}
}

// TestCorpusHistory runs the PROTOCOL checks on the tfplugin history.
func TestCorpusHistory(t *testing.T) {
	dir := filepath.Join(sharedDir(t), "corpus", "terraform")
	got, err := History(context.Background(), dir, HistoryOptions{BufCompat: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("buf-compatible history: want the two ServerCapabilities findings, got %+v", got)
	}
	for i, maj := range []string{"5", "6"} {
		f := got[i]
		if f.Path != "tfplugin"+maj+".4.proto" || f.Type != "FIELD_WIRE_JSON_COMPATIBLE_TYPE" || !strings.Contains(f.Message, "ServerCapabilities") {
			t.Errorf("finding %d: %+v", i, f)
		}
	}
	got, err = History(context.Background(), dir, HistoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 {
		t.Fatalf("plugkit history: want no findings, got %+v", got)
	}
}
