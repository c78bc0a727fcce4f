//go:build tools

package registrytest

// The registry program (testdata/registry) is left out of ./..., and so of
// what go mod tidy reads; these imports, behind a tag no build sets, keep
// its modules required in go.mod.
import (
	_ "github.com/distribution/distribution/v3/configuration"
	_ "github.com/distribution/distribution/v3/registry/auth/htpasswd"
	_ "github.com/distribution/distribution/v3/registry/handlers"
	_ "github.com/distribution/distribution/v3/registry/storage/driver/filesystem"
	_ "github.com/distribution/distribution/v3/registry/storage/driver/inmemory"
	_ "github.com/sirupsen/logrus"
)
