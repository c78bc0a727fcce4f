package catalog_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/plugkit/plugkit/catalog"
	"github.com/plugkit/plugkit/handshake"
)

// mainEnv makes the test binary run catalog.Main with a failing catalog.
const mainEnv = "PLUGKIT_CATALOG_MAIN_TEST"

// TestMainReportsACatalogError runs catalog.Main in a child process whose
// catalog cannot be built: it must print the error and exit with status 1,
// without serving.
func TestMainReportsACatalogError(t *testing.T) {
	if os.Getenv(mainEnv) != "" {
		catalog.Main(handshake.Cookie{Key: "K", Value: "v"}, func() (*catalog.Catalog, error) {
			return nil, errors.New("no implementations: fix newCatalog")
		})
		return
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, "-test.run=^TestMainReportsACatalogError$")
	cmd.Env = append(os.Environ(), mainEnv+"=1")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(string(out), "no implementations: fix newCatalog") {
		t.Errorf("catalog.Main with a failing catalog: %v\n%s; want exit status 1 and the error", err, out)
	}
}
