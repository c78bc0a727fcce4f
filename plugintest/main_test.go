package plugintest_test

import (
	"os"
	"testing"

	"github.com/plugkit/plugkit/internal/testutil"
)

// TestMain fails the tests when they leave files in the temporary
// directory or processes running (testutil.Main).
func TestMain(m *testing.M) { os.Exit(testutil.Main(m)) }
