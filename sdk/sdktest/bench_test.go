//go:build sdk && linux

package sdktest

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/plugkit/plugkit/examples/objectstore"
	objectstorev1 "github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v1"
	"github.com/plugkit/plugkit/host"
)

// The objectstore v1 plugins compared: Go's memory and the SDKs' v1
// examples, all in memory behind the same service.
var benchPlugins = []string{"memory", "py-objectstore-v1", "node-objectstore-v1"}

func startPlugin(b *testing.B, file string) *host.Client {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := host.Start(ctx, host.Command{Path: filepath.Join(pluginDir, file), Cookie: objectstore.Cookie}, host.Options{Versions: []int{1}})
	if err != nil {
		b.Fatal(err)
	}
	return c
}

func exists(b *testing.B, c *host.Client) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := objectstorev1.NewObjectStoreClient(c.Conn()).Exists(ctx, &objectstorev1.ExistsRequest{Key: "k"}); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkColdStart: from spawning the plugin to its first answered call
// (AutoMTLS handshake, health check, one Exists); the stop is not counted.
func BenchmarkColdStart(b *testing.B) {
	for _, file := range benchPlugins {
		b.Run(file, func(b *testing.B) {
			for b.Loop() {
				c := startPlugin(b, file)
				exists(b, c)
				b.StopTimer()
				c.Close()
				b.StartTimer()
			}
		})
	}
}

// BenchmarkUnary: one Exists call on a running plugin, over AutoMTLS.
func BenchmarkUnary(b *testing.B) {
	for _, file := range benchPlugins {
		b.Run(file, func(b *testing.B) {
			c := startPlugin(b, file)
			defer c.Close()
			exists(b, c)
			for b.Loop() {
				exists(b, c)
			}
		})
	}
}
