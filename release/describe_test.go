package release

import (
	"context"
	"fmt"
	"os"
	"testing"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/plugkit/plugkit/describe"
	"github.com/plugkit/plugkit/examples/objectstore"
	catalogv1 "github.com/plugkit/plugkit/gen/plugkit/catalog/v1"
	"github.com/plugkit/plugkit/handshake"
)

// lineOnlyEnv, set, makes the test binary a catalog plugin that answers
// only the describe request (handshake.EnvDescribe), with the memory
// plugin's description, and exits 1 when started to serve.
const lineOnlyEnv = "PLUGKIT_RELEASE_TEST_LINE_ONLY"

// describeByLineOnly is the plugin lineOnlyEnv makes of the test binary.
func describeByLineOnly() {
	if os.Getenv(handshake.EnvDescribe) != "1" {
		fmt.Fprintln(os.Stderr, "started to serve: this plugin answers only the describe request")
		os.Exit(1)
	}
	payload, err := proto.Marshal(&catalogv1.DescribeResponse{PluginVersion: "1.0.0", Kinds: []*catalogv1.Kind{{Name: "objectstore", Majors: []*catalogv1.Major{{Major: 1, Names: []string{"line"}}}}}})
	if err != nil {
		panic(err)
	}
	line, _ := handshake.FormatDescribe(payload)
	fmt.Println(line)
	os.Exit(0)
}

// TestDescribeTakesTheDescribeLine: release describes a binary as the
// manager does, asking for its describe line first: a plugin that
// answers only that (and exits at once) is described without serving.
func TestDescribeTakesTheDescribeLine(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(lineOnlyEnv, "1") // the plugin inherits the environment
	d, err := describeBinary(testCtx(t), self, objectstore.Cookie, describe.DefaultTimeout)
	if err != nil || d.GetKinds()[0].GetMajors()[0].GetNames()[0] != "line" {
		t.Fatalf("describe of a plugin that answers only by its describe line: %v, %v; want its description", d, err)
	}
}

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
