package release

import (
	"context"
	"fmt"

	catalogv1 "github.com/plugkit/plugkit/gen/plugkit/catalog/v1"
	"github.com/plugkit/plugkit/handshake"
	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/manager"
	"github.com/plugkit/plugkit/wire"
)

// describeBinary starts the binary at path, pinned to sha256Hex when that
// is not empty, and returns its Describe answer, checked as the manager
// checks it. With a pin, the host hashes the file it opened and executes
// that same open file, so the binary described is the one verified; the
// file is hashed once, not again by a manager.
func describeBinary(ctx context.Context, path string, cookie handshake.Cookie, sha256Hex string) (*catalogv1.DescribeResponse, error) {
	if cookie.Key == "" {
		return nil, fmt.Errorf("describe %s: no magic cookie: set the plugin's handshake cookie (--cookie KEY=VALUE)", path)
	}
	c, err := host.Start(ctx, host.Command{Path: path, Cookie: cookie, SHA256: sha256Hex},
		host.Options{Versions: []int{wire.CatalogProtocolVersion}})
	if err != nil {
		return nil, fmt.Errorf("describe %s: %w", path, err)
	}
	defer c.Close()
	d, err := manager.DescribeCatalog(ctx, c.Conn())
	if err != nil {
		return nil, fmt.Errorf("describe %s: %w", path, err)
	}
	return d, nil
}
