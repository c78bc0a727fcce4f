//go:build unix

package release

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plugkit/plugkit/examples/objectstore"
)

// TestDescribeOfAHangingPluginIsBounded starts a plugin whose Describe
// never answers with a context that has no deadline (a host embedding
// the package): describe gives up after its timeout, as the manager
// does, with an error that says so, instead of waiting forever.
func TestDescribeOfAHangingPluginIsBounded(t *testing.T) {
	parallel(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(t.TempDir(), "objectstore-hang")
	writeFile(t, script, []byte(fmt.Sprintf("#!/bin/sh\n%s=1 GORACE=atexit_sleep_ms=0 exec '%s'\n", hangEnv, self)), 0o755)
	done := make(chan error, 1)
	go func() {
		_, err := describeBinary(context.Background(), script, objectstore.Cookie, time.Second)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "did not start and answer Describe within 1s") {
			t.Fatalf("got %v, want the Describe deadline named", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("describe of a plugin whose Describe hangs did not return in 30s")
	}
}
