package kvcheck_test

import (
	"os"
	"testing"

	"github.com/plugkit/plugkit/internal/testutil"
)

// TestMain runs the tests in a temporary directory of their own and fails
// them when they leave files there or processes running (testutil.Main).
func TestMain(m *testing.M) {
	os.Exit(testutil.Main(m))
}
