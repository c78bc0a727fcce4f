package conformance_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/plugkit/plugkit/conformance"
)

// counter is a toy client for the suite's own tests.
type counter struct{ n int }

func TestSuiteRunReports(t *testing.T) {
	var setupRan, cleanupRan bool
	var ids []string
	s := conformance.Suite[*counter]{
		Kind: "toy", Major: 1, CaseTimeout: 200 * time.Millisecond,
		Setup: func(ctx context.Context, c *counter) (func(), error) {
			setupRan = true
			return func() { cleanupRan = true }, nil
		},
		Cases: []conformance.Case[*counter]{
			{Name: "passes", Run: func(ctx context.Context, c *counter) error {
				ids = append(ids, conformance.RunID(ctx))
				c.n++
				return nil
			}},
			{Name: "fails", Run: func(context.Context, *counter) error { return errors.New("wrong answer") }},
			{Name: "panics", Run: func(context.Context, *counter) error { panic("boom") }},
			{Name: "hangs", Run: func(ctx context.Context, _ *counter) error { select {} }},
		},
	}
	c := &counter{}
	rep := s.Run(context.Background(), c)
	if rep.Passed != 1 || len(rep.Failures) != 3 || rep.OK() || c.n != 1 || !setupRan || !cleanupRan {
		t.Fatalf("report %+v, n %d, setup %v cleanup %v", rep, c.n, setupRan, cleanupRan)
	}
	want := map[string]string{"fails": "wrong answer", "panics": "panic: boom", "hangs": "deadline"}
	for _, f := range rep.Failures {
		if !strings.Contains(f.Error, want[f.Case]) {
			t.Errorf("case %s failed with %q, want %q in it", f.Case, f.Error, want[f.Case])
		}
	}
	s.Run(context.Background(), c)
	if len(ids) != 2 || ids[0] == ids[1] || ids[0] == "" {
		t.Errorf("run IDs %q: want two different, non-empty", ids)
	}
}

func TestSuiteSetupFailureFailsEveryCase(t *testing.T) {
	s := conformance.Suite[*counter]{
		Setup: func(context.Context, *counter) (func(), error) { return nil, errors.New("no disk") },
		Cases: []conformance.Case[*counter]{{Name: "a", Run: func(context.Context, *counter) error { return nil }}, {Name: "b"}},
	}
	rep := s.Run(context.Background(), &counter{})
	if rep.Passed != 0 || len(rep.Failures) != 2 || !strings.Contains(rep.Failures[1].Error, "setup: no disk") {
		t.Errorf("report %+v", rep)
	}
}

func TestWriters(t *testing.T) {
	cells := []conformance.Cell{
		{Plugin: "example.com/a", Version: "1.0.0", Binary: "/x/a", HostMajor: 2, Mode: conformance.ModeAdapter, Passed: 3},
		{Plugin: "example.com/b", Version: "2.0.0", Binary: "/x/b", HostMajor: 2, Mode: conformance.ModeFailing, Via: conformance.ModeDirect, Passed: 2, Failed: 1,
			Failures: []conformance.Failure{{Case: "put then get", Error: "got\nother bytes"}}},
		{Plugin: "example.com/c", Version: "3.0.0", Binary: "/x/c", HostMajor: 2, Mode: conformance.ModeIncompatible, Advice: "pick 2.4.0"},
	}
	if !conformance.Failing(cells) || conformance.Failing([]conformance.Cell{cells[0], cells[2]}) {
		t.Error("Failing: want true only with a failing cell (incompatible is not failing)")
	}
	var js bytes.Buffer
	if err := conformance.WriteJSON(&js, cells); err != nil {
		t.Fatal(err)
	}
	var objs []map[string]any
	if err := json.Unmarshal(js.Bytes(), &objs); err != nil || len(objs) != 3 {
		t.Fatalf("JSON: %v %s", err, js.String())
	}
	for _, k := range []string{"plugin", "version", "host_major", "mode", "passed", "failed", "failures", "advice"} {
		for i, o := range objs {
			if _, ok := o[k]; !ok {
				t.Errorf("cell %d lacks %q: %v", i, k, o)
			}
		}
	}
	var text, md bytes.Buffer
	conformance.WriteText(&text, cells)
	conformance.WriteMarkdown(&md, cells)
	for name, out := range map[string]string{"text": text.String(), "markdown": md.String()} {
		for _, want := range []string{"example.com/a", "adapter", "failing (direct)", "put then get", "got other bytes", "pick 2.4.0"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s output lacks %q:\n%s", name, want, out)
			}
		}
	}
	if lines := strings.Split(md.String(), "\n"); !slices.Contains(lines, "| `example.com/a` | 1.0.0 | `a` | v2 | adapter | 3 | 0 |") {
		t.Errorf("markdown row:\n%s", md.String())
	}
}
