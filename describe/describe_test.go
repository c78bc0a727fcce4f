package describe_test

// The test binary doubles as the plugins the tests describe: started with
// PLUGKIT_DESCRIBE_TEST=MODE it becomes that plugin (see TestMain).

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/plugkit/plugkit/broker"
	"github.com/plugkit/plugkit/catalog"
	"github.com/plugkit/plugkit/describe"
	"github.com/plugkit/plugkit/examples/objectstore/backend"
	objectstorev1 "github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v1"
	catalogv1 "github.com/plugkit/plugkit/gen/plugkit/catalog/v1"
	"github.com/plugkit/plugkit/handshake"
	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/testutil"
	"github.com/plugkit/plugkit/plugin"
	"github.com/plugkit/plugkit/wire"
)

const (
	// modeEnv makes the test binary a plugin: "catalog" serves a real
	// catalog with catalog.Serve (it answers the describe request by
	// line); "line" answers the request with the describe line that
	// answerEnv names and exits 1 when it is not asked; "grpc" ignores the
	// request and serves a Catalog over gRPC, writing its pid to pidEnv's
	// file.
	modeEnv   = "PLUGKIT_DESCRIBE_TEST"
	answerEnv = "PLUGKIT_DESCRIBE_TEST_ANSWER"
	pidEnv    = "PLUGKIT_DESCRIBE_TEST_PID"
)

var cookie = handshake.Cookie{Key: "PLUGKIT_DESCRIBE_TEST_COOKIE", Value: "d"}

func TestMain(m *testing.M) {
	switch os.Getenv(modeEnv) {
	case "":
		os.Exit(m.Run())
	case "catalog":
		cat, err := catalog.New("1.2.3", catalog.Implement[objectstorev1.ObjectStoreServer]("objectstore", 1, 4, "mem", &objectstorev1.ObjectStore_ServiceDesc, backend.V1{B: backend.NewMemory()}))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		catalog.Serve(cookie, cat)
	case "line":
		if os.Getenv(handshake.EnvDescribe) != "1" {
			fmt.Fprintln(os.Stderr, "started without the describe request: this plugin only answers it")
			os.Exit(1)
		}
		line, _ := handshake.FormatDescribe(answer(os.Getenv(answerEnv)))
		fmt.Println(line)
	case "grpc":
		if err := os.WriteFile(os.Getenv(pidEnv), []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		plugin.Serve(plugin.Config{Cookie: cookie, Versions: map[int]plugin.Register{
			wire.CatalogProtocolVersion: func(s *grpc.Server, _ *broker.Broker) error {
				catalogv1.RegisterCatalogServer(s, fixedCatalog{d: good()})
				return nil
			},
		}})
	}
	os.Exit(0)
}

// good is a well-formed answer: one kind, one major, one name.
func good() *catalogv1.DescribeResponse {
	return &catalogv1.DescribeResponse{PluginVersion: "1.0.0", Kinds: []*catalogv1.Kind{{Name: "objectstore", Majors: []*catalogv1.Major{{Major: 1, Names: []string{"mem"}}}}}}
}

// answer is the payload of the "line" plugin's describe line.
func answer(name string) []byte {
	switch name {
	case "garbage":
		return []byte("\xff\xff\xff")
	case "nameless":
		b, _ := proto.Marshal(&catalogv1.DescribeResponse{Kinds: []*catalogv1.Kind{{Majors: []*catalogv1.Major{{Major: 1, Names: []string{"x"}}}}}})
		return b
	}
	b, _ := proto.Marshal(good())
	return b
}

// fixedCatalog answers Describe with d.
type fixedCatalog struct {
	catalogv1.UnimplementedCatalogServer
	d *catalogv1.DescribeResponse
}

func (f fixedCatalog) Describe(context.Context, *catalogv1.DescribeRequest) (*catalogv1.DescribeResponse, error) {
	return f.d, nil
}

// command is the test binary as the plugin of mode, with env added.
func command(t *testing.T, mode string, env ...string) host.Command {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return host.Command{Path: self, Cookie: cookie, Env: append([]string{modeEnv + "=" + mode}, env...)}
}

func options(t *testing.T) host.Options {
	return host.Options{Versions: []int{wire.CatalogProtocolVersion}, Logger: testutil.Logger(t)}
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestStartByLine: a catalog plugin asked for its description writes it
// on its describe line and exits; Start decodes it and gives no Client.
// The "line" plugin exits 1 unless asked, so only the describe line can
// describe it.
func TestStartByLine(t *testing.T) {
	ctx := testCtx(t)
	for _, mode := range []string{"catalog", "line"} {
		d, c, err := describe.Start(ctx, command(t, mode), options(t))
		if err != nil || c != nil {
			t.Fatalf("%s: Start: %v, %v; want a description and no Client", mode, c, err)
		}
		if k := d.GetKinds(); len(k) != 1 || k[0].GetName() != "objectstore" {
			t.Errorf("%s: Start described %v, want the objectstore kind", mode, d)
		}
	}
	d, err := describe.Run(ctx, command(t, "line"), options(t), 0)
	if err != nil || d.GetKinds()[0].GetName() != "objectstore" {
		t.Errorf("Run of a plugin that answers only by line: %v, %v; want its description", d, err)
	}
}

// TestStartRefusesABadLine: a describe line whose payload is no
// DescribeResponse, or a malformed one, is refused with an error that
// says so and what to do.
func TestStartRefusesABadLine(t *testing.T) {
	ctx := testCtx(t)
	for answer, want := range map[string]string{
		"garbage":  "its describe line holds no DescribeResponse",
		"nameless": "Describe: the answer is malformed: kind #1 has no name",
	} {
		d, c, err := describe.Start(ctx, command(t, "line", answerEnv+"="+answer), options(t))
		if err == nil || c != nil || d != nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "fix the plugin") {
			t.Errorf("%s: Start: %v, %v, %v; want an error saying %q", answer, d, c, err, want)
		}
	}
}

// TestRunFallsBackToDescribe: a plugin that ignores the describe request
// is started, asked over gRPC and stopped: Start gives its Client and no
// description, Run its description and no process left running.
func TestRunFallsBackToDescribe(t *testing.T) {
	ctx := testCtx(t)
	pidFile := filepath.Join(testutil.TempDir(t), "pid")
	cmd := command(t, "grpc", pidEnv+"="+pidFile)
	d, c, err := describe.Start(ctx, cmd, options(t))
	if err != nil || c == nil || d != nil {
		t.Fatalf("Start of a plugin that ignores the request: %v, %v, %v; want its Client", d, c, err)
	}
	c.Close()
	d, err = describe.Run(ctx, cmd, options(t), 0)
	if err != nil || !proto.Equal(d, good()) {
		t.Fatalf("Run: %v, %v; want the answer it serves", d, err)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(string(b))
	if err != nil {
		t.Fatal(err)
	}
	if testutil.Running(pid) {
		t.Errorf("Run left the plugin's process %d running", pid)
	}
}

// serveCatalog serves srv, when set, as the Catalog on a loopback
// listener, and returns a connection to it.
func serveCatalog(t *testing.T, srv catalogv1.CatalogServer) *grpc.ClientConn {
	t.Helper()
	lis, addr := testutil.LocalListener(t)
	s := grpc.NewServer()
	if srv != nil {
		catalogv1.RegisterCatalogServer(s, srv)
	}
	go s.Serve(lis)
	t.Cleanup(s.Stop)
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

// TestConn: Conn gives a good answer; refuses a 2 MB one (it is not
// kept), a malformed one, and names a server without a Catalog, keeping
// the gRPC status of each.
func TestConn(t *testing.T) {
	ctx := testCtx(t)
	d, err := describe.Conn(ctx, serveCatalog(t, fixedCatalog{d: good()}))
	if err != nil || !proto.Equal(d, good()) {
		t.Errorf("Conn of a good catalog: %v, %v", d, err)
	}
	huge := &catalogv1.DescribeResponse{PluginVersion: strings.Repeat("v", 2<<20)}
	for name, tc := range map[string]struct {
		srv  catalogv1.CatalogServer
		code codes.Code
		want string
	}{
		"huge":     {fixedCatalog{d: huge}, codes.ResourceExhausted, "Describe: the answer is larger than the 1048576 bytes"},
		"nameless": {fixedCatalog{d: &catalogv1.DescribeResponse{Kinds: []*catalogv1.Kind{{}}}}, codes.Unknown, "kind #1 has no name"},
		"none":     {nil, codes.Unimplemented, "serves no plugkit.catalog.v1.Catalog"},
	} {
		d, err := describe.Conn(ctx, serveCatalog(t, tc.srv))
		if d != nil || err == nil || !strings.Contains(err.Error(), tc.want) || status.Code(err) != tc.code {
			t.Errorf("%s: Conn: %v, %v (%v); want %q and %v", name, d, err, status.Code(err), tc.want, tc.code)
		}
	}
}

// manyKinds is a Describe answer claiming n (kind, name) pairs: n kinds,
// each with the one-byte name "a".
func manyKinds(n int) *catalogv1.DescribeResponse {
	d := &catalogv1.DescribeResponse{}
	for i := range n {
		d.Kinds = append(d.Kinds, &catalogv1.Kind{Name: fmt.Sprintf("k%d", i), Majors: []*catalogv1.Major{{Major: 1, Names: []string{"a"}}}})
	}
	return d
}

// TestCheckCapsNames: an answer naming more than MaxNames
// implementations is refused, and the error names the bound.
func TestCheckCapsNames(t *testing.T) {
	if err := describe.Check(manyKinds(describe.MaxNames)); err != nil {
		t.Fatalf("an answer of %d names was refused: %v", describe.MaxNames, err)
	}
	err := describe.Check(manyKinds(describe.MaxNames + 1))
	if err == nil || !strings.Contains(err.Error(), "describe.MaxNames") || !strings.Contains(err.Error(), "10001") {
		t.Fatalf("an answer of 10001 names: %v, want it refused naming describe.MaxNames", err)
	}
	// The same count through one kind's majors.
	d := &catalogv1.DescribeResponse{Kinds: []*catalogv1.Kind{{Name: "kv"}}}
	for i := range 101 {
		maj := &catalogv1.Major{Major: uint32(i + 1)}
		for j := range 100 {
			maj.Names = append(maj.Names, fmt.Sprint(j))
		}
		d.Kinds[0].Majors = append(d.Kinds[0].Majors, maj)
	}
	if err := describe.Check(d); err == nil || !strings.Contains(err.Error(), "describe.MaxNames") {
		t.Fatalf("an answer of 101 majors of 100 names: %v, want it refused", err)
	}
}

// TestCheckRefusesMalformed: each malformed shape is refused with the
// place it is wrong.
func TestCheckRefusesMalformed(t *testing.T) {
	for want, d := range map[string]*catalogv1.DescribeResponse{
		"kind #2 has no name":                       {Kinds: []*catalogv1.Kind{good().Kinds[0], {}}},
		`kind "kv" has a major 0`:                   {Kinds: []*catalogv1.Kind{{Name: "kv", Majors: []*catalogv1.Major{{Names: []string{"a"}}}}}},
		`kind "kv" major 2 names no implementation`: {Kinds: []*catalogv1.Kind{{Name: "kv", Majors: []*catalogv1.Major{{Major: 2}}}}},
		`kind "kv" major 1 has an empty`:            {Kinds: []*catalogv1.Kind{{Name: "kv", Majors: []*catalogv1.Major{{Major: 1, Names: []string{"a", ""}}}}}},
	} {
		if err := describe.Check(d); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Check: %v, want %q", err, want)
		}
	}
	if err := describe.Check(good()); err != nil {
		t.Errorf("Check of a good answer: %v", err)
	}
}

// compilingGuests is a guest runner that compiles ahead, as
// wasmhost.Runtime does, and records in order what it was asked and
// whether each context had a deadline; it starts no guest.
type compilingGuests struct{ calls *[]string }

func (compilingGuests) Prepare(*host.Launch) error { return errors.New("not a module") }

func (g compilingGuests) CompileFile(ctx context.Context, _ string) error {
	_, deadline := ctx.Deadline()
	*g.calls = append(*g.calls, fmt.Sprintf("compile deadline=%v", deadline))
	return nil
}

func (g compilingGuests) StartGuest(ctx context.Context, _ host.GuestSpec) (host.Guest, error) {
	_, deadline := ctx.Deadline()
	*g.calls = append(*g.calls, fmt.Sprintf("start deadline=%v", deadline))
	return nil, errors.New("no guest in this test")
}

// TestRunCompilesAheadOutsideTheTimeout: Run has a runner that compiles
// ahead compile a module first, under the caller's context alone (no
// deadline here), and only then start it within the timeout.
func TestRunCompilesAheadOutsideTheTimeout(t *testing.T) {
	module := filepath.Join(testutil.TempDir(t), "p.wasm")
	if err := os.WriteFile(module, []byte("\x00asm\x01\x00\x00\x00"), 0o644); err != nil {
		t.Fatal(err)
	}
	var calls []string
	_, err := describe.Run(context.Background(), host.Command{Path: module, Cookie: cookie, Runner: compilingGuests{&calls}}, options(t), time.Hour)
	if err == nil || !strings.Contains(err.Error(), "no guest in this test") {
		t.Errorf("Run: %v, want the runner's start error", err)
	}
	if want := []string{"compile deadline=false", "start deadline=true"}; !slices.Equal(calls, want) {
		t.Errorf("the runner was asked %q, want %q: the compile outside Run's timeout, the start within it", calls, want)
	}
}
