package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	reflectionv1 "google.golang.org/grpc/reflection/grpc_reflection_v1"
	reflectionv1alpha "google.golang.org/grpc/reflection/grpc_reflection_v1alpha"
	"google.golang.org/grpc/status"

	"github.com/plugkit/plugkit/host"
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
}

func runInspect(args []string, stdout, stderr io.Writer) int {
	const usage = "plugkit inspect PLUGIN --cookie KEY=VALUE [--versions 5,6] [--no-mtls] [--json] [--verbose]"
	fs := newFlagSet("inspect", usage, stderr)
	var pf pluginFlags
	pf.register(fs)
	asJSON := fs.Bool("json", false, "print one JSON object")
	verbose := fs.Bool("verbose", false, "show the plugin's log records on stderr")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return 2
	}
	if len(pos) != 1 {
		fmt.Fprintf(stderr, "plugkit inspect: want one plugin path, got %d arguments\nusage: %s\n", len(pos), usage)
		return 2
	}
	cookie, versions, err := pf.parse()
	if err != nil {
		fmt.Fprintf(stderr, "plugkit inspect: %v\n", err)
		return 2
	}
	timeout, err := time.ParseDuration(pf.timeout)
	if err != nil {
		fmt.Fprintf(stderr, "plugkit inspect: --timeout: %v\n", err)
		return 2
	}
	level := slog.LevelError + 1
	if *verbose {
		level = slog.LevelDebug
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout+10*time.Second)
	defer cancel()
	client, err := host.Start(ctx, host.Config{
		Path:         pos[0],
		Cookie:       cookie,
		Versions:     versions,
		NoAutoMTLS:   pf.noMTLS,
		StartTimeout: timeout,
		Logger:       slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})),
	})
	if err != nil {
		reportError(stderr, "plugkit inspect", err)
		return 1
	}
	defer client.Close()
	services, err := listServices(ctx, client.Conn())
	if err != nil {
		fmt.Fprintf(stderr, "plugkit inspect: listing services through reflection: %s\n", oneLine(err))
		return 1
	}
	out := inspection{
		Path:            pos[0],
		ProtocolVersion: client.Version(),
		Network:         client.Network(),
		Address:         client.Address(),
		Protocol:        "grpc",
		TLS:             client.TLS(),
		Services:        services,
		Pid:             client.Pid(),
		StartMS:         float64(client.StartDuration().Microseconds()) / 1000,
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		if err := enc.Encode(out); err != nil {
			return 1
		}
		return 0
	}
	fmt.Fprintf(stdout, "plugin:    %s (pid %d)\n", out.Path, out.Pid)
	fmt.Fprintf(stdout, "protocol:  %s, app protocol version %d (host offered %s)\n", out.Protocol, out.ProtocolVersion, pf.versions)
	fmt.Fprintf(stdout, "listening: %s %s, AutoMTLS %v\n", out.Network, out.Address, out.TLS)
	fmt.Fprintf(stdout, "started:   %.1f ms\n", out.StartMS)
	fmt.Fprintf(stdout, "services:\n")
	for _, s := range out.Services {
		fmt.Fprintf(stdout, "  %s\n", s)
	}
	return 0
}

// reportError prints err as one line of reason, followed by the plugin's
// last stderr lines when there are any.
func reportError(w io.Writer, prefix string, err error) {
	first, rest, _ := strings.Cut(err.Error(), "\n")
	fmt.Fprintf(w, "%s: %s\n", prefix, first)
	if rest != "" {
		fmt.Fprintln(w, rest)
	}
}

// listServices asks the plugin's reflection service for its services,
// through reflection v1 and, for older servers, v1alpha.
func listServices(ctx context.Context, conn *grpc.ClientConn) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	names, err := listV1(ctx, conn)
	if status.Code(err) == codes.Unimplemented {
		names, err = listV1Alpha(ctx, conn)
	}
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	return names, nil
}

func listV1(ctx context.Context, conn *grpc.ClientConn) ([]string, error) {
	stream, err := reflectionv1.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
	if err != nil {
		return nil, err
	}
	defer stream.CloseSend()
	if err := stream.Send(&reflectionv1.ServerReflectionRequest{MessageRequest: &reflectionv1.ServerReflectionRequest_ListServices{}}); err != nil {
		return nil, err
	}
	resp, err := stream.Recv()
	if err != nil {
		return nil, err
	}
	if e := resp.GetErrorResponse(); e != nil {
		return nil, errors.New(e.GetErrorMessage())
	}
	var names []string
	for _, s := range resp.GetListServicesResponse().GetService() {
		names = append(names, s.GetName())
	}
	return names, nil
}

func listV1Alpha(ctx context.Context, conn *grpc.ClientConn) ([]string, error) {
	stream, err := reflectionv1alpha.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
	if err != nil {
		return nil, err
	}
	defer stream.CloseSend()
	if err := stream.Send(&reflectionv1alpha.ServerReflectionRequest{MessageRequest: &reflectionv1alpha.ServerReflectionRequest_ListServices{}}); err != nil {
		return nil, err
	}
	resp, err := stream.Recv()
	if err != nil {
		return nil, err
	}
	if e := resp.GetErrorResponse(); e != nil {
		return nil, errors.New(e.GetErrorMessage())
	}
	var names []string
	for _, s := range resp.GetListServicesResponse().GetService() {
		names = append(names, s.GetName())
	}
	return names, nil
}
