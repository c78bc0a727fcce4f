package registrytest

import (
	"os"
	"testing"

	"github.com/plugkit/plugkit/internal/testutil"
)

func TestMain(m *testing.M) {
	os.Exit(testutil.Main(testutil.Then(m, Remove)))
}
