package genfresh

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bufbuild/protocompile"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"

	greeterv1 "github.com/plugkit/plugkit/examples/greeter/gen/greeter/v1"
	greeterv2 "github.com/plugkit/plugkit/examples/greeter/gen/greeter/v2"
	objectstorev1 "github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v1"
	objectstorev2 "github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v2"
	objectstorev3 "github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v3"
	catalogv1 "github.com/plugkit/plugkit/gen/plugkit/catalog/v1"
	"github.com/plugkit/plugkit/internal/goplugin/pluginpb"
	notifierv1 "github.com/plugkit/plugkit/internal/kindgen/testdata/notifier/gen/notifier/v1"
	notifierv2 "github.com/plugkit/plugkit/internal/kindgen/testdata/notifier/gen/notifier/v2"
)

// generated lists each buf module root (relative to the repository root),
// the file inside it, and the descriptor the committed Go code carries.
var generated = []struct {
	root, file string
	desc       protoreflect.FileDescriptor
}{
	{"proto", "plugkit/goplugin/broker.proto", pluginpb.File_plugkit_goplugin_broker_proto},
	{"proto", "plugkit/goplugin/controller.proto", pluginpb.File_plugkit_goplugin_controller_proto},
	{"proto", "plugkit/goplugin/stdio.proto", pluginpb.File_plugkit_goplugin_stdio_proto},
	{"proto", "plugkit/catalog/v1/catalog.proto", catalogv1.File_plugkit_catalog_v1_catalog_proto},
	{"examples/objectstore/proto", "objectstore/v1/objectstore.proto", objectstorev1.File_objectstore_v1_objectstore_proto},
	{"examples/objectstore/proto", "objectstore/v2/objectstore.proto", objectstorev2.File_objectstore_v2_objectstore_proto},
	{"examples/objectstore/proto", "objectstore/v3/objectstore.proto", objectstorev3.File_objectstore_v3_objectstore_proto},
	{"examples/greeter/proto", "greeter/v1/greeter.proto", greeterv1.File_greeter_v1_greeter_proto},
	{"examples/greeter/proto", "greeter/v2/greeter.proto", greeterv2.File_greeter_v2_greeter_proto},
	{"internal/kindgen/testdata/notifier/proto", "notifier/v1/notifier.proto", notifierv1.File_notifier_v1_notifier_proto},
	{"internal/kindgen/testdata/notifier/proto", "notifier/v2/notifier.proto", notifierv2.File_notifier_v2_notifier_proto},
}

func TestGeneratedCodeIsFresh(t *testing.T) {
	for _, g := range generated {
		t.Run(g.file, func(t *testing.T) {
			root := filepath.Join("..", "..", g.root)
			compiler := protocompile.Compiler{
				Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{ImportPaths: []string{root}}),
			}
			files, err := compiler.Compile(context.Background(), g.file)
			if err != nil {
				t.Fatalf("compiling %s: %v", g.file, err)
			}
			want := protodesc.ToFileDescriptorProto(files[0])
			got := protodesc.ToFileDescriptorProto(g.desc)
			want.SourceCodeInfo, got.SourceCodeInfo = nil, nil
			if !proto.Equal(want, got) {
				t.Errorf("the Go code generated from %s/%s is stale: run `make generate` and commit the result", g.root, g.file)
			}
		})
	}
}

// TestPluginPackageIsPrivate checks that `make generate` kept package
// plugin's descriptors out of the global registry (see internal/tools/privatize).
func TestPluginPackageIsPrivate(t *testing.T) {
	for _, name := range []string{"broker.pb.go", "controller.pb.go", "stdio.pb.go"} {
		src, err := os.ReadFile(filepath.Join("..", "goplugin", "pluginpb", name))
		if err != nil {
			t.Fatal(err)
		}
		if !containsAll(string(src), "FileRegistry: ", "TypeRegistry: ") {
			t.Errorf("%s registers globally: run `make generate` (it runs internal/tools/privatize)", name)
		}
	}
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
