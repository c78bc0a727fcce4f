package release

import (
	"context"
	"fmt"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/plugkit/plugkit/examples/objectstore"
	catalogv1 "github.com/plugkit/plugkit/gen/plugkit/catalog/v1"
)

// hangEnv, set, makes the test binary a go-plugin plugin whose Describe
// never answers.
const hangEnv = "PLUGKIT_RELEASE_TEST_HANG"

// serveHangingDescribe serves a catalog whose Describe blocks until the
// host goes away, behind a healthy go-plugin handshake.
func serveHangingDescribe() {
	goplugin.Serve(&goplugin.ServeConfig{
		HandshakeConfig: goplugin.HandshakeConfig{ProtocolVersion: 1, MagicCookieKey: objectstore.Cookie.Key, MagicCookieValue: objectstore.Cookie.Value},
		Plugins:         goplugin.PluginSet{"catalog": hangingCatalog{}},
		GRPCServer:      goplugin.DefaultGRPCServer,
	})
}

type hangingCatalog struct {
	goplugin.NetRPCUnsupportedPlugin
	catalogv1.UnimplementedCatalogServer
}

func (h hangingCatalog) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	catalogv1.RegisterCatalogServer(s, h)
	return nil
}

func (hangingCatalog) GRPCClient(context.Context, *goplugin.GRPCBroker, *grpc.ClientConn) (any, error) {
	return nil, fmt.Errorf("not used")
}

func (hangingCatalog) Describe(ctx context.Context, _ *catalogv1.DescribeRequest) (*catalogv1.DescribeResponse, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}
