package plugkit

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// hostSidePackages are the packages a host links. They talk to plugins
// but never serve one, so they must not pull in the plugin's server code.
var hostSidePackages = []string{
	"github.com/plugkit/plugkit/manager",
	"github.com/plugkit/plugkit/host",
	"github.com/plugkit/plugkit/compat",
	"github.com/plugkit/plugkit/release",
}

// pluginServerPackages are packages only a serving plugin needs: the
// plugin side of plugkit and gRPC's reflection server, with their
// subpackages. gRPC's health package is not listed: it holds the
// client-side health checking host.Dial registers as well as the server,
// so a host needs it.
var pluginServerPackages = []string{
	"github.com/plugkit/plugkit/plugin",
	"google.golang.org/grpc/reflection",
}

// TestHostSideDepsExcludePluginServer fails when a host-side package
// depends on the plugin's server code, so that every host would link it.
// Wire facts both sides share belong in package wire, which imports
// nothing heavy.
func TestHostSideDepsExcludePluginServer(t *testing.T) {
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	for _, pkg := range hostSidePackages {
		out, err := exec.Command(goTool, "list", "-deps", pkg).Output()
		if err != nil {
			var stderr []byte
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = ee.Stderr
			}
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, stderr)
		}
		deps := strings.Fields(string(out))
		if len(deps) == 0 {
			t.Fatalf("go list -deps %s printed nothing", pkg)
		}
		for _, dep := range deps {
			for _, bad := range pluginServerPackages {
				if dep == bad || strings.HasPrefix(dep, bad+"/") {
					t.Errorf("%s depends on %s, plugin-side server code every host would link: find the import that pulls it in (go list -deps -f '{{.ImportPath}}: {{.Imports}}' %s) and take the shared fact from package wire instead", pkg, dep, pkg)
				}
			}
		}
	}
}
