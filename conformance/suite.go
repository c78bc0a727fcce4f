package conformance

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"testing"
	"time"
)

// DefaultCaseTimeout bounds one case when Suite.CaseTimeout is zero.
const DefaultCaseTimeout = 30 * time.Second

// Case is one check of a suite. Run returns nil when the plugin behind
// client behaves, or an error that says what it did instead.
type Case[T any] struct {
	// Name names the case in reports: a short sentence such as
	// "put then get returns the bytes".
	Name string
	Run  func(ctx context.Context, client T) error
}

// Suite is the conformance suite of one major of a kind, over the host's
// typed client T of that major.
type Suite[T any] struct {
	Kind  string
	Major int
	// Setup, when set, runs once on the client before the cases (an
	// object store's Init, say). Its cleanup, if not nil, runs after
	// them. A failing Setup fails every case.
	Setup func(ctx context.Context, client T) (cleanup func(), err error)
	Cases []Case[T]
	// CaseTimeout bounds each case; 0 means DefaultCaseTimeout.
	CaseTimeout time.Duration
}

// Failure is a failed case.
type Failure struct {
	Case  string `json:"case"`
	Error string `json:"error"`
}

// Report is the outcome of one run of a suite.
type Report struct {
	Kind     string
	Major    int
	Passed   int
	Failures []Failure
}

// OK reports whether every case passed.
func (r Report) OK() bool { return len(r.Failures) == 0 }

type runIDKey struct{}

// RunID returns a string unique to the current run of a suite, for the
// names a case creates in the plugin (keys, buckets, ...): runs against
// the same plugin process, one per host major in the Matrix, then never
// see each other's data.
func RunID(ctx context.Context) string {
	id, _ := ctx.Value(runIDKey{}).(string)
	return id
}

func newRunID() string {
	b := make([]byte, 6)
	rand.Read(b)
	return "conformance-" + hex.EncodeToString(b)
}

// Run runs every case, in order, on client, and reports. A case that
// panics fails with the panic's value; ctx bounds the whole run.
func (s Suite[T]) Run(ctx context.Context, client T) Report {
	ctx = context.WithValue(ctx, runIDKey{}, newRunID())
	rep := Report{Kind: s.Kind, Major: s.Major}
	if s.Setup != nil {
		cleanup, err := s.Setup(ctx, client)
		if err != nil {
			for _, c := range s.Cases {
				rep.Failures = append(rep.Failures, Failure{Case: c.Name, Error: "setup: " + err.Error()})
			}
			return rep
		}
		if cleanup != nil {
			defer cleanup()
		}
	}
	for _, c := range s.Cases {
		if err := s.runCase(ctx, c, client); err != nil {
			rep.Failures = append(rep.Failures, Failure{Case: c.Name, Error: err.Error()})
		} else {
			rep.Passed++
		}
	}
	return rep
}

func (s Suite[T]) runCase(ctx context.Context, c Case[T], client T) (err error) {
	ctx, cancel := context.WithTimeout(ctx, cmp.Or(s.CaseTimeout, DefaultCaseTimeout))
	defer cancel()
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	done := make(chan error, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- fmt.Errorf("panic: %v", p)
			}
		}()
		done <- c.Run(ctx, client)
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("did not finish within its deadline: %w", ctx.Err())
	}
}

// Test runs the suite as subtests of t, one per case, named after the
// cases: for a plugin author's go test (through plugintest) or a test
// against a built binary.
func (s Suite[T]) Test(t *testing.T, client T) {
	t.Helper()
	ctx := context.WithValue(t.Context(), runIDKey{}, newRunID())
	if s.Setup != nil {
		cleanup, err := s.Setup(ctx, client)
		if err != nil {
			t.Fatalf("%s v%d conformance setup: %v", s.Kind, s.Major, err)
		}
		if cleanup != nil {
			t.Cleanup(cleanup)
		}
	}
	for _, c := range s.Cases {
		t.Run(c.Name, func(t *testing.T) {
			if err := s.runCase(ctx, c, client); err != nil {
				t.Errorf("%s v%d: %s: %v", s.Kind, s.Major, c.Name, err)
			}
		})
	}
}
