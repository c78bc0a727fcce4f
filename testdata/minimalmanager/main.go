// Command minimalmanager is the smallest host of the manager: it
// discovers the plugins of ./plugins and prints what it found. The deps
// test builds it to see what a manager program links (no WebAssembly
// runtime, since it passes no guest runner).
package main

import (
	"context"
	"fmt"

	"github.com/plugkit/plugkit/handshake"
	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/manager"
)

func main() {
	finder := &manager.Finder{Launch: host.Command{Cookie: handshake.Cookie{Key: "K", Value: "V"}}}
	m := manager.New(manager.Config{Sources: []manager.Source{finder.Dirs("./plugins")}})
	defer m.Close()
	fmt.Println(m.Discover(context.Background()))
}
