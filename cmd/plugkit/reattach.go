package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/debugline"
)

// attach connects to the running plugin that --reattach describes. The
// host offers the plugin's own protocol version unless --versions says
// otherwise; Close leaves a plugin in debug mode running.
func (p *pluginFlags) attach(cmd string, verbose bool, stderr io.Writer) (*host.Client, int) {
	rcs, err := debugline.Parse(p.reattach)
	if err != nil {
		fmt.Fprintf(stderr, "%s: --reattach: %s\n", cmd, oneLine(err))
		return nil, 2
	}
	name, rc, err := debugline.Only(rcs)
	if err != nil {
		fmt.Fprintf(stderr, "%s: --reattach: %s\n", cmd, oneLine(err))
		return nil, 2
	}
	versions, err := p.explicitVersions()
	if err != nil {
		fmt.Fprintf(stderr, "%s: --versions %q: want a comma list such as 5,6\n", cmd, p.versions)
		return nil, 2
	}
	if versions == nil {
		versions = []int{rc.ProtocolVersion}
	}
	timeout, ok := p.startTimeout(cmd, stderr)
	if !ok {
		return nil, 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	client, err := host.Reattach(ctx, rc, host.Options{
		Name:     name,
		Versions: versions,
		Logger:   cliLogger(verbose, stderr),
	}, host.ReattachOptions{TrustTCPListener: p.trustTCP})
	if oe := (*host.OwnerError)(nil); errors.As(err, &oe) && oe.Unchecked {
		err = fmt.Errorf("%w (plugkit: --trust-tcp-listener)", err)
	}
	if err != nil {
		reportError(stderr, cmd, err)
		return nil, 1
	}
	track(func() { client.Close() })
	return client, 0
}
