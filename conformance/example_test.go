package conformance_test

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/plugkit/plugkit/conformance"
)

// Upper is a toy host client: a kind whose plugins upper-case text.
type Upper interface {
	Upper(ctx context.Context, s string) (string, error)
}

type goodPlugin struct{}

func (goodPlugin) Upper(_ context.Context, s string) (string, error) { return strings.ToUpper(s), nil }

type lazyPlugin struct{}

func (lazyPlugin) Upper(_ context.Context, s string) (string, error) { return s, nil }

// A kind's suite is written once, per major, over the host's typed client.
func ExampleSuite_Run() {
	suite := conformance.Suite[Upper]{Kind: "upper", Major: 1, Cases: []conformance.Case[Upper]{
		{Name: "upper-cases ASCII", Run: func(ctx context.Context, u Upper) error {
			if got, err := u.Upper(ctx, "abc"); err != nil || got != "ABC" {
				return fmt.Errorf("Upper(abc) = %q, %v", got, err)
			}
			return nil
		}},
		{Name: "keeps digits", Run: func(ctx context.Context, u Upper) error {
			if got, err := u.Upper(ctx, "a1"); err != nil || got != "A1" {
				return fmt.Errorf("Upper(a1) = %q, %v", got, err)
			}
			return nil
		}},
	}}
	for _, p := range []Upper{goodPlugin{}, lazyPlugin{}} {
		rep := suite.Run(context.Background(), p)
		fmt.Printf("%T: %d passed, failures %v\n", p, rep.Passed, rep.Failures)
	}
	// Output:
	// conformance_test.goodPlugin: 2 passed, failures []
	// conformance_test.lazyPlugin: 0 passed, failures [{upper-cases ASCII Upper(abc) = "abc", <nil>} {keeps digits Upper(a1) = "a1", <nil>}]
}

// The matrix's cells, as a table for people.
func ExampleWriteText() {
	conformance.WriteText(os.Stdout, []conformance.Cell{
		{Plugin: "example.com/memory", Version: "1.3.0", Binary: "/plugins/memory", HostMajor: 2, Mode: conformance.ModeAdapter, Passed: 13},
		{Plugin: "example.com/memory", Version: "1.3.0", Binary: "/plugins/memory", HostMajor: 1, Mode: conformance.ModeDirect, Passed: 8},
	})
	// Output:
	// PLUGIN              VERSION  BINARY  HOST MAJOR  MODE     PASSED  FAILED
	// example.com/memory  1.3.0    memory  v2          adapter  13      0
	// example.com/memory  1.3.0    memory  v1          direct   8       0
}
