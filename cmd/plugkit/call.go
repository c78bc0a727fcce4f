package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/plugkit/plugkit/catalog"
	"github.com/plugkit/plugkit/internal/reflectcall"
)

func init() {
	commands["call"] = command{
		summary: "launch a go-plugin gRPC plugin and call one method by name, JSON in and out",
		run:     runCall,
	}
}

// maxRequestSize bounds a request read from standard input.
const maxRequestSize = 64 << 20

const callUsage = "plugkit call PLUGIN --cookie KEY=VALUE [--versions 5,6] [--no-mtls] [--compact] [--name NAME] [--metadata K=V]... SERVICE[/METHOD] [JSON|-]\n       plugkit call --connect HOST:PORT --tls-ca F --tls-cert F --tls-key F [flags] SERVICE[/METHOD] [JSON|-]\n       plugkit call --reattach JSON [--versions 5,6] [--compact] [--name NAME] [--metadata K=V]... SERVICE[/METHOD] [JSON|-]"

// runCall launches the plugin, resolves the method through server
// reflection and calls it with the request given as protobuf JSON
// (default {}; - reads standard input). A unary response is printed
// indented (one line with --compact); a server stream prints one JSON
// object per line per message. Without SERVICE/METHOD it lists the
// plugin's methods.
func runCall(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("call", callUsage, stderr)
	var pf pluginFlags
	pf.register(fs)
	rpcTimeout := fs.Duration("rpc-timeout", 30*time.Second, "deadline of the call (and of each reflection look-up)")
	compact := fs.Bool("compact", false, "print a unary response on one line")
	verbose := fs.Bool("verbose", false, "show the plugin's log records on stderr")
	name := fs.String("name", "", "the implementation to call in a plugin that serves several (the plugkit-name metadata)")
	var mdFlags multiFlag
	fs.Var(&mdFlags, "metadata", "gRPC metadata `K=V` sent with the call (repeatable), e.g. for Vault's multiplexed plugins")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return 2
	}
	pf.parsed(fs)
	if pf.remote.set() {
		pos = append([]string{"remote:" + pf.remote.connect}, pos...) // a service instead of a path
	} else if pf.reattach != "" {
		if len(pos) > 2 {
			fmt.Fprintf(stderr, "plugkit call: with --reattach, want [SERVICE[/METHOD] [JSON]] (no plugin path), got %d arguments\nusage: %s\n", len(pos), callUsage)
			return 2
		}
		pos = append([]string{""}, pos...)
	}
	if len(pos) < 1 || len(pos) > 3 {
		fmt.Fprintf(stderr, "plugkit call: want PLUGIN SERVICE/METHOD [JSON], got %d arguments\nusage: %s\n", len(pos), callUsage)
		return 2
	}
	if *rpcTimeout <= 0 {
		fmt.Fprintf(stderr, "plugkit call: --rpc-timeout %v: want a positive duration such as 30s\n", *rpcTimeout)
		return 2
	}
	md, err := callMetadata(*name, mdFlags)
	if err != nil {
		fmt.Fprintf(stderr, "plugkit call: %v\n", err)
		return 2
	}
	var method string
	if len(pos) >= 2 {
		method = pos[1]
		if _, _, err := reflectcall.ParseMethodName(method); err != nil && !isServiceName(method) {
			fmt.Fprintf(stderr, "plugkit call: %v\n", err)
			return 2
		}
	}
	request := []byte("{}")
	if len(pos) == 3 {
		request = []byte(pos[2])
		if pos[2] == "-" {
			request, err = io.ReadAll(io.LimitReader(os.Stdin, maxRequestSize))
			if err != nil {
				fmt.Fprintf(stderr, "plugkit call: reading the request from standard input: %v\n", err)
				return 1
			}
		}
	}

	client, code := pf.start("plugkit call", pos[0], *verbose, stderr)
	if client == nil {
		return code
	}
	defer client.Close()

	rc := reflectcall.New(client.Conn())
	ctx, cancel := context.WithTimeout(context.Background(), *rpcTimeout)
	defer cancel()
	if method == "" {
		if err := listMethods(ctx, rc, stdout, ""); err != nil {
			fmt.Fprintf(stderr, "plugkit call: %s\n", oneLine(err))
			return 1
		}
		fmt.Fprintf(stderr, "plugkit call: name a method to call it: %s\n", callUsage)
		return 2
	}
	if !strings.Contains(method, "/") {
		// SERVICE alone lists that service's methods. A name with a dot
		// is a service when the plugin has one by that name, and is
		// read as SERVICE.METHOD only otherwise.
		services, err := rc.Services(ctx)
		if err != nil {
			fmt.Fprintf(stderr, "plugkit call: %s\n", oneLine(err))
			return 1
		}
		if slices.Contains(services, method) {
			if err := listMethods(ctx, rc, stdout, method); err != nil {
				fmt.Fprintf(stderr, "plugkit call: %s\n", oneLine(err))
				return 1
			}
			return 0
		}
		if !isMethodName(method) {
			fmt.Fprintf(stderr, "plugkit call: the plugin has no service %q; it has %s\n", method, safe(strings.Join(services, ", ")))
			return 1
		}
	}
	ctx = metadata.NewOutgoingContext(ctx, md)
	mdesc, err := rc.Method(ctx, method)
	if err != nil {
		fmt.Fprintf(stderr, "plugkit call: %s\n", oneLine(err))
		return 1
	}
	req, err := rc.NewRequest(mdesc, request)
	if err != nil {
		fmt.Fprintf(stderr, "plugkit call: %s\n", oneLine(err))
		return 2
	}
	indent := !*compact && !mdesc.IsStreamingServer()
	err = rc.Call(ctx, mdesc, req, func(m proto.Message) error {
		out, err := rc.Format(m, indent)
		if err != nil {
			return err
		}
		_, err = stdout.Write(append(out, '\n'))
		return err
	})
	if err != nil {
		fmt.Fprintf(stderr, "plugkit call: %s: %s\n", method, oneLine(err))
		return 1
	}
	return 0
}

// callMetadata builds the metadata sent with the call: --name as the
// catalog's routing key, then each --metadata K=V.
func callMetadata(name string, pairs []string) (metadata.MD, error) {
	md := metadata.MD{}
	if name != "" {
		md.Set(catalog.NameKey, name)
	}
	for _, kv := range pairs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--metadata %q: want KEY=VALUE", kv)
		}
		md.Append(strings.ToLower(k), v)
	}
	return md, nil
}

// isServiceName reports whether s could be a service's full name in a
// package (PACKAGE.SERVICE).
func isServiceName(s string) bool {
	return !strings.Contains(s, "/") && strings.Contains(s, ".") && protoreflect.FullName(s).IsValid()
}

// isMethodName reports whether s parses as SERVICE/METHOD or SERVICE.METHOD.
func isMethodName(s string) bool {
	_, _, err := reflectcall.ParseMethodName(s)
	return err == nil
}

// listMethods prints each service (or only the one named) and its
// methods, marking streams.
func listMethods(ctx context.Context, rc *reflectcall.Client, w io.Writer, only string) error {
	services := []string{only}
	if only == "" {
		var err error
		if services, err = rc.Services(ctx); err != nil {
			return err
		}
	}
	var buf bytes.Buffer
	for _, s := range services {
		sd, err := rc.Service(ctx, s)
		if err != nil {
			return err
		}
		fmt.Fprintf(&buf, "%s\n", safe(s))
		for i := range sd.Methods().Len() {
			md := sd.Methods().Get(i)
			var kind []string
			if md.IsStreamingClient() {
				kind = append(kind, "client stream")
			}
			if md.IsStreamingServer() {
				kind = append(kind, "server stream")
			}
			note := ""
			if len(kind) > 0 {
				note = " (" + strings.Join(kind, ", ") + ")"
			}
			fmt.Fprintf(&buf, "  %s/%s%s\n", safe(s), safe(string(md.Name())), note)
		}
	}
	_, err := w.Write(buf.Bytes())
	return err
}
