package conformance_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/plugkit/plugkit/catalog"
	"github.com/plugkit/plugkit/conformance"
	"github.com/plugkit/plugkit/examples/objectstore"
	"github.com/plugkit/plugkit/examples/objectstore/backend"
	objectstorev1 "github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v1"
	catalogv1 "github.com/plugkit/plugkit/gen/plugkit/catalog/v1"
	"github.com/plugkit/plugkit/internal/testutil"
	"github.com/plugkit/plugkit/manager"
)

// pluginEnv makes the test binary serve an object-store v1 plugin.
const pluginEnv = "PLUGKIT_CONFORMANCE_TEST_PLUGIN"

func TestMain(m *testing.M) {
	if os.Getenv(pluginEnv) != "" {
		cat, err := catalog.New("1.0.0", catalog.Implement[objectstorev1.ObjectStoreServer](objectstore.Kind, 1, 0, "example.com/test",
			&objectstorev1.ObjectStore_ServiceDesc, backend.V1{B: backend.NewMemory()}))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		catalog.Serve(objectstore.Cookie, cat)
		os.Exit(0)
	}
	os.Exit(testutil.Main(m))
}

// TestMatrixDescribesEachBinaryOnce checks that the matrix starts and
// describes each binary once, through the manager it dispenses from, and
// that the process serves every host major.
func TestMatrixDescribesEachBinaryOnce(t *testing.T) {
	t.Parallel()
	testutil.NotOnWindows(t, "its plugins are shell scripts")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := testutil.TempDir(t)
	const binaries = 2
	for i := range binaries {
		script := fmt.Sprintf("#!/bin/sh\n%s=1 GORACE=atexit_sleep_ms=0 exec '%s' \"$@\"\n", pluginEnv, exe)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("p%d", i)), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var describes atomic.Int64
	count := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoke grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if method == catalogv1.Catalog_Describe_FullMethodName {
			describes.Add(1)
		}
		return invoke(ctx, method, req, reply, cc, opts...)
	}
	var mu sync.Mutex
	var finders []*manager.Finder
	watch := func(f *manager.Finder, cfg manager.Config) *manager.Manager {
		f.Host.DialOptions = append(f.Host.DialOptions, grpc.WithChainUnaryInterceptor(count))
		mu.Lock()
		finders = append(finders, f)
		mu.Unlock()
		return manager.New(cfg)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	mx := conformance.WithNewManager(conformance.Matrix{Kind: objectstore.Kind, Cookie: objectstore.Cookie, Hosts: objectstore.MatrixHosts(false)}, watch)
	cells, err := mx.Run(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(cells) != 2*binaries {
		t.Fatalf("%d cells, want %d: %+v", len(cells), 2*binaries, cells)
	}
	for _, c := range cells {
		want := conformance.ModeDirect
		if c.HostMajor == 2 {
			want = conformance.ModeAdapter
		}
		if c.Mode != want {
			t.Errorf("%s v%d: mode %s, want %s (failures %v)", c.Binary, c.HostMajor, c.Mode, want, c.Failures)
		}
	}
	if n := describes.Load(); n != binaries {
		t.Errorf("%d Describe calls for %d binaries, want one each", n, binaries)
	}
	var launches int64
	for _, f := range finders {
		launches += f.Launches()
	}
	if len(finders) != binaries || launches != binaries {
		t.Errorf("%d managers launched %d processes for %d binaries, want one manager and one process each, for Describe and both host majors", len(finders), launches, binaries)
	}
}
