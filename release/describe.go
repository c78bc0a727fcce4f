package release

import (
	"context"
	"fmt"
	"path/filepath"

	catalogv1 "github.com/plugkit/plugkit/gen/plugkit/catalog/v1"
	"github.com/plugkit/plugkit/handshake"
	"github.com/plugkit/plugkit/manager"
)

// describeBinary starts the binary at path, pinned to sha256Hex when that
// is not empty, and returns its Describe answer. It is the package's one
// use of the manager.
func describeBinary(ctx context.Context, path string, cookie handshake.Cookie, sha256Hex string) (*catalogv1.DescribeResponse, error) {
	if cookie.Key == "" {
		return nil, fmt.Errorf("describe %s: no magic cookie: set the plugin's handshake cookie (--cookie KEY=VALUE)", path)
	}
	cfg := manager.Config{Dirs: []string{filepath.Dir(path)}, Cookie: cookie}
	if sha256Hex != "" {
		cfg.Pins = map[string]string{path: sha256Hex}
	}
	m := manager.New(cfg)
	defer m.Close()
	b := m.DescribeBinary(ctx, path)
	if b.Err != nil {
		return nil, fmt.Errorf("describe %s: %w", path, b.Err)
	}
	return b.Description, nil
}
