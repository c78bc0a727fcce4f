package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/plugkit/plugkit/handshake"
	"github.com/plugkit/plugkit/internal/reflectcall"
)

func init() {
	commands["inspect"] = command{
		summary: "launch a go-plugin gRPC plugin, negotiate, list its services, close it",
		run:     runInspect,
	}
}

// inspection is what inspect reports; its JSON form is documented in the
// README.
type inspection struct {
	Path            string   `json:"path"`
	ProtocolVersion int      `json:"protocol_version"`
	Network         string   `json:"network"`
	Address         string   `json:"address"`
	Protocol        string   `json:"protocol"`
	TLS             bool     `json:"tls"`
	Services        []string `json:"services"`
	Pid             int      `json:"pid"`
	StartMS         float64  `json:"start_ms"`
	// Reattached is set with --reattach; Name is then the plugin's name
	// in the reattach configuration, and Path is empty.
	Reattached bool   `json:"reattached,omitempty"`
	Name       string `json:"name,omitempty"`
	// Wasm is set for a WebAssembly plugin, run inside plugkit's process
	// (Pid 0) and reached over an in-memory connection (Network stdio).
	Wasm bool `json:"wasm,omitempty"`
}

func runInspect(args []string, stdout, stderr io.Writer) int {
	const usage = "plugkit inspect PLUGIN --cookie KEY=VALUE [--versions 5,6] [--no-mtls] [--json] [--verbose] [-- ARG...]\n       plugkit inspect --connect HOST:PORT --tls-ca F --tls-cert F --tls-key F [--json] [--verbose]\n       plugkit inspect --reattach JSON [--trust-tcp-listener] [--versions 5,6] [--json] [--verbose]\n\nArguments after -- are passed to the launched plugin as its command-line arguments."
	args, pluginArgs := splitPluginArgs(args)
	fs := newFlagSet("inspect", usage, stderr)
	var pf pluginFlags
	pf.register(fs)
	asJSON := fs.Bool("json", false, "print one JSON object")
	verbose := fs.Bool("verbose", false, "show the plugin's log records on stderr")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return 2
	}
	pf.parsed(fs)
	pf.args = pluginArgs
	if pf.remote.set() && len(pos) == 0 {
		pos = []string{pf.remote.connect} // a service (its endpoints) instead of a path
	} else if pf.reattach != "" {
		if len(pos) != 0 {
			fmt.Fprintf(stderr, "plugkit inspect: --reattach takes the place of the plugin path: drop %q\nusage: %s\n", pos[0], usage)
			return 2
		}
		pos = []string{""}
	}
	if len(pos) != 1 {
		fmt.Fprintf(stderr, "plugkit inspect: want one plugin path, got %d arguments\nusage: %s\n", len(pos), usage)
		return 2
	}
	began := time.Now()
	client, stop, code := pf.start("plugkit inspect", pos[0], *verbose, stderr)
	startMS := float64(time.Since(began).Microseconds()) / 1000
	if client == nil {
		return code
	}
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	services, err := reflectcall.New(client.Conn()).Services(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "plugkit inspect: listing services through reflection: %s\n", oneLine(err))
		return 1
	}
	out := inspection{
		Path:            pos[0],
		Reattached:      pf.reattach != "",
		Name:            client.Name(),
		ProtocolVersion: client.Version(),
		Network:         client.ReattachConfig().Addr.Network,
		Address:         client.ReattachConfig().Addr.String,
		Protocol:        handshake.ProtocolGRPC,
		TLS:             client.TLS(),
		Services:        services,
		Pid:             client.Pid(),
		StartMS:         startMS,
		Wasm:            pf.module,
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		if err := enc.Encode(out); err != nil {
			return 1
		}
		return 0
	}
	printInspection(stdout, out, pf.remote.set(), pf.versions)
	return 0
}

// printInspection writes what inspect found as text: a service's
// (remote), a reattached plugin's or a launched one's (offered the
// versions).
func printInspection(w io.Writer, out inspection, remote bool, versions string) {
	if remote {
		fmt.Fprintf(w, "service:   %s\n", out.Address)
		fmt.Fprintf(w, "protocol:  %s, app protocol version %d\n", out.Protocol, out.ProtocolVersion)
		fmt.Fprintf(w, "tls:       %v\n", out.TLS)
		fmt.Fprintf(w, "connected: %.1f ms\n", out.StartMS)
		fmt.Fprintf(w, "services:\n")
		for _, s := range out.Services {
			fmt.Fprintf(w, "  %s\n", safe(s))
		}
		return
	}
	if out.Reattached {
		fmt.Fprintf(w, "plugin:    %s (pid %d, reattached; left running)\n", safe(out.Name), out.Pid)
		fmt.Fprintf(w, "protocol:  %s, app protocol version %d\n", out.Protocol, out.ProtocolVersion)
	} else {
		if out.Wasm {
			fmt.Fprintf(w, "plugin:    %s (a WebAssembly module, run inside plugkit)\n", out.Path)
		} else {
			fmt.Fprintf(w, "plugin:    %s (pid %d)\n", out.Path, out.Pid)
		}
		fmt.Fprintf(w, "protocol:  %s, app protocol version %d (host offered %s)\n", out.Protocol, out.ProtocolVersion, versions)
	}
	if out.Wasm {
		fmt.Fprintf(w, "listening: an in-memory connection, no socket (no TLS needed)\n")
	} else {
		fmt.Fprintf(w, "listening: %s %s, AutoMTLS %v\n", out.Network, out.Address, out.TLS)
	}
	fmt.Fprintf(w, "started:   %.1f ms\n", out.StartMS)
	fmt.Fprintf(w, "services:\n")
	for _, s := range out.Services {
		fmt.Fprintf(w, "  %s\n", safe(s))
	}
}
