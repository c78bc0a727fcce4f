package kindgen_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plugkit/plugkit/catalog"
	greeterv2 "github.com/plugkit/plugkit/examples/greeter/gen/greeter/v2"
	"github.com/plugkit/plugkit/examples/greeter/gen/greeter/v2/greeterv2plugin"
	notifierv1 "github.com/plugkit/plugkit/internal/kindgen/testdata/notifier/gen/notifier/v1"
	"github.com/plugkit/plugkit/internal/kindgen/testdata/notifier/gen/notifier/v1/notifierv1plugin"
	notifierv2 "github.com/plugkit/plugkit/internal/kindgen/testdata/notifier/gen/notifier/v2"
	"github.com/plugkit/plugkit/internal/kindgen/testdata/notifier/gen/notifier/v2/notifierv2plugin"

	"github.com/plugkit/plugkit/internal/testutil"
)

// buildAdapter compiles src as package adapter beside the generated
// notifier kind (testdata/notifier, generated from the .proto files there
// and kept fresh by internal/genfresh), through a go build overlay so that
// nothing is written into the checkout. It returns the build's output and
// error.
func buildAdapter(t *testing.T, src string) (string, error) {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil && testutil.UnderWine() {
		// make test-windows runs the tests as Windows programs, where no Go
		// tool is; make test compiles the adapter on Linux.
		t.Skip("no Go tool under Wine to compile the adapter with")
	}
	if err != nil {
		t.Fatalf("the go command is needed to compile the adapter: %v", err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "adapter.go")
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	target, err := filepath.Abs(filepath.Join("testdata", "notifier", "adapter", "adapter.go"))
	if err != nil {
		t.Fatal(err)
	}
	overlay, err := json.Marshal(map[string]map[string]string{"Replace": {target: file}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "overlay.json"), overlay, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goTool, "build", "-overlay", filepath.Join(dir, "overlay.json"), "-o", os.DevNull, "./testdata/notifier/adapter")
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("go build of the adapter did not finish in 5 minutes: %s", out)
	}
	return string(out), err
}

const adapterHead = `package adapter

import (
	"context"

	"google.golang.org/grpc"

	notifierv1 "github.com/plugkit/plugkit/internal/kindgen/testdata/notifier/gen/notifier/v1"
	notifierv2 "github.com/plugkit/plugkit/internal/kindgen/testdata/notifier/gen/notifier/v2"
)

var (
	_ = context.Background
	_ grpc.CallOption
	_ notifierv1.SendRequest
)
`

// TestRenamedRPCDoesNotCompileUntilWritten is the notifier: v2
// renames v1's Send to Post. The generator cannot tell a rename from a new
// RPC, so the adapter that presents a v1 plugin as v2 must not compile
// until its author writes Post; once written, it compiles.
func TestRenamedRPCDoesNotCompileUntilWritten(t *testing.T) {
	out, err := buildAdapter(t, adapterHead+`
var Adapters = notifierv2.Adapters{V1: func(f notifierv2.V1Forward) notifierv2.NotifierClient { return f }}
`)
	if err == nil {
		t.Fatal("an adapter that does not write Post (v1's Send, renamed) compiles; it must not, or it fails only at run time")
	}
	if !strings.Contains(out, "missing method Post") {
		t.Errorf("the compile error does not name Post:\n%s", out)
	}
	out, err = buildAdapter(t, adapterHead+`
type v1Adapter struct{ notifierv2.V1Forward }

func (a v1Adapter) Post(ctx context.Context, in *notifierv2.PostRequest, opts ...grpc.CallOption) (*notifierv2.PostResponse, error) {
	resp, err := a.V1.Send(ctx, &notifierv1.SendRequest{To: in.GetTo(), Text: in.GetText()}, opts...)
	if err != nil {
		return nil, err
	}
	return &notifierv2.PostResponse{Id: resp.GetId()}, nil
}

var Adapters = notifierv2.Adapters{V1: func(f notifierv2.V1Forward) notifierv2.NotifierClient { return v1Adapter{f} }}
`)
	if err != nil {
		t.Fatalf("the adapter that writes Post does not compile: %v\n%s", err, out)
	}
}

// notifier is a notifier v2 server.
type notifier struct {
	notifierv2.UnimplementedNotifierServer
}

// TestCatalogRefusesUnsetRPC serves notifier v1 from a v2 server through
// the generated notifierv2plugin.V1, which leaves Send (renamed Post in
// v2) to the plugin: catalog.New must refuse it while Send is unset, and
// name it.
func TestCatalogRefusesUnsetRPC(t *testing.T) {
	v1 := notifierv2plugin.V1(notifier{})
	_, err := catalog.New("2.0.0", notifierv1plugin.Implement("example.com/n", v1.Server()))
	if err == nil {
		t.Fatal("catalog.New accepts notifier v1 without Send")
	}
	for _, want := range []string{"Send", "notifier 1.0", "example.com/n"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("catalog.New's error %q does not name %q", err, want)
		}
	}
	v1.Send = func(context.Context, *notifierv1.SendRequest) (*notifierv1.SendResponse, error) {
		return &notifierv1.SendResponse{}, nil
	}
	if _, err := catalog.New("2.0.0", notifierv1plugin.Implement("example.com/n", v1.Server())); err != nil {
		t.Errorf("catalog.New refuses notifier v1 with Send set: %v", err)
	}
}

// TestCatalogRefusesUnsetRPCOfAnnouncedMinor: a Funcs may leave unset an
// RPC of a minor newer than the one its implementation announces (a host
// never calls it), but not one of the announced minor.
func TestCatalogRefusesUnsetRPCOfAnnouncedMinor(t *testing.T) {
	funcs := greeterv2plugin.Funcs{Greet: func(context.Context, *greeterv2.GreetRequest) (*greeterv2.GreetResponse, error) {
		return &greeterv2.GreetResponse{}, nil
	}}
	if _, err := catalog.New("2.0.0", catalog.Implement(greeterv2.Kind, 2, 0, "example.com/g", &greeterv2.Greeter_ServiceDesc, funcs.Server())); err != nil {
		t.Errorf("catalog.New refuses greeter 2.0 without Farewell (greeter 2.1): %v", err)
	}
	_, err := catalog.New("2.1.0", greeterv2plugin.Implement("example.com/g", funcs.Server()))
	if err == nil || !strings.Contains(err.Error(), "Farewell") || !strings.Contains(err.Error(), "greeter 2.1") {
		t.Errorf("catalog.New of greeter 2.1 without Farewell: %v; want an error naming Farewell and greeter 2.1", err)
	}
}
