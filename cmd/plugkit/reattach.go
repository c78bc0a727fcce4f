package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/plugkit/plugkit/handshake"
	"github.com/plugkit/plugkit/host"
)

// attach connects to the running plugin that --reattach describes. The
// host offers the plugin's own protocol version unless --versions says
// otherwise; Close leaves a plugin in debug mode running.
func (p *pluginFlags) attach(cmd string, verbose bool, stderr io.Writer) (*host.Client, int) {
	rcs, err := host.ParseReattachLine(p.reattach)
	if err != nil {
		fmt.Fprintf(stderr, "%s: --reattach: %s\n", cmd, oneLine(err))
		return nil, 2
	}
	name, rc, err := host.OnlyReattach(rcs)
	if err != nil {
		fmt.Fprintf(stderr, "%s: --reattach: %s\n", cmd, oneLine(err))
		return nil, 2
	}
	versions := []int{rc.ProtocolVersion}
	if p.versionsSet {
		if versions, err = handshake.ParseVersions(p.versions); err != nil || len(versions) == 0 {
			fmt.Fprintf(stderr, "%s: --versions %q: want a comma list such as 5,6\n", cmd, p.versions)
			return nil, 2
		}
	}
	timeout, err := time.ParseDuration(p.timeout)
	if err != nil || timeout <= 0 {
		fmt.Fprintf(stderr, "%s: --timeout %q: want a positive duration such as 30s\n", cmd, p.timeout)
		return nil, 2
	}
	level := slog.LevelError + 1
	if verbose {
		level = slog.LevelDebug
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	client, err := host.Reattach(ctx, rc, host.Config{
		Name:     name,
		Versions: versions,
		Logger:   slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})),
	})
	if err != nil {
		reportError(stderr, cmd, err)
		return nil, 1
	}
	track(func() { client.Close() })
	return client, 0
}
