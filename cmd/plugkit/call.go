package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/plugkit/plugkit/internal/reflectcall"
	"github.com/plugkit/plugkit/wire"
)

func init() {
	commands["call"] = command{
		summary: "launch a go-plugin gRPC plugin and call one method by name, JSON in and out",
		run: func(args []string, stdout, stderr io.Writer) int {
			return runCall(args, os.Stdin, stdout, stderr)
		},
	}
}

// maxRequestSize bounds a request read from standard input (and one
// line of --stdin): the largest message the plugin takes by default,
// since a bigger request could not be sent anyway.
const maxRequestSize = wire.DefaultMaxMessageSize

const callUsage = `plugkit call PLUGIN --cookie KEY=VALUE [--versions 5,6] [--no-mtls] [--compact] [--name NAME] [--metadata K=V]... SERVICE[/METHOD] [JSON|-] [SERVICE/METHOD [JSON]]... [-- ARG...]
       plugkit call PLUGIN --cookie KEY=VALUE [flags] --stdin [-- ARG...]
       plugkit call --connect HOST:PORT --tls-ca F --tls-cert F --tls-key F [flags] SERVICE[/METHOD] [JSON|-] [SERVICE/METHOD [JSON]]...
       plugkit call --reattach JSON [--trust-tcp-listener] [--versions 5,6] [--compact] [--name NAME] [--metadata K=V]... SERVICE[/METHOD] [JSON|-] [SERVICE/METHOD [JSON]]...

Each SERVICE/METHOD is called in order in the one plugin process, with the JSON request that follows it
({} when none; - reads it from standard input), and each answer is printed as it comes. With --stdin the
calls come from standard input instead, one JSON object a line:
  {"method":"SERVICE/METHOD","request":{...}}
("request" may be left out for {}; blank lines are skipped). The first call that fails stops the sequence:
the answers before it are printed, stderr names the call ("call 2 of 3 (SERVICE/METHOD)", or "call 2
(stdin line 4, SERVICE/METHOD)"), and the exit status is 1 (2 for a request that does not parse).
Arguments after -- are passed to the launched plugin as its command-line arguments.`

// call is one method call of a plugkit call sequence.
type call struct {
	method  string
	request []byte
	label   string // names the call in errors
}

// runCall launches the plugin, resolves each method through server
// reflection and calls it with the request given as protobuf JSON
// (default {}; - reads standard input), in order. A unary response is
// printed indented (one line with --compact); a server stream prints one
// JSON object per line per message. Without SERVICE/METHOD it lists the
// plugin's methods. It reads requests (-) and --stdin's calls from stdin.
func runCall(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	args, pluginArgs := splitPluginArgs(args)
	fs := newFlagSet("call", callUsage, stderr)
	var pf pluginFlags
	pf.register(fs)
	rpcTimeout := fs.Duration("rpc-timeout", 30*time.Second, "deadline of each call (and of each reflection look-up)")
	compact := fs.Bool("compact", false, "print a unary response on one line")
	verbose := fs.Bool("verbose", false, "show the plugin's log records on stderr")
	fromStdin := fs.Bool("stdin", false, `read the calls from standard input, one JSON object a line: {"method":"SERVICE/METHOD","request":{...}}`)
	name := fs.String("name", "", "the implementation to call in a plugin that serves several (the plugkit-name metadata)")
	var mdFlags multiFlag
	fs.Var(&mdFlags, "metadata", "gRPC metadata `K=V` sent with each call (repeatable), e.g. for Vault's multiplexed plugins")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return 2
	}
	pf.parsed(fs)
	pf.args = pluginArgs
	if pf.remote.set() {
		pos = append([]string{pf.remote.connect}, pos...) // a service (its endpoints) instead of a path
	} else if pf.reattach != "" {
		pos = append([]string{""}, pos...)
	}
	if len(pos) < 1 {
		fmt.Fprintf(stderr, "plugkit call: want PLUGIN SERVICE/METHOD [JSON], got no arguments\nusage: %s\n", callUsage)
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
	hint := ""
	if pf.reattach != "" {
		hint = " (with --reattach, want SERVICE/METHOD [JSON]... and no plugin path)"
	}
	calls, code := parseCalls(pos[1:], *fromStdin, hint, stdin, stderr)
	if code != 0 {
		return code
	}

	client, stop, code := pf.start("plugkit call", pos[0], *verbose, stderr)
	if client == nil {
		return code
	}
	defer stop()

	c := &caller{rc: reflectcall.New(client.Conn()), md: md, timeout: *rpcTimeout, compact: *compact, stdout: stdout, stderr: stderr}
	if *fromStdin {
		return c.runStdin(stdin)
	}
	if len(calls) <= 1 {
		if done, code := c.listInstead(calls); done {
			return code
		}
	}
	for _, cl := range calls {
		if code := c.call(cl); code != 0 {
			return code
		}
	}
	return 0
}

// splitPluginArgs splits args at the first "--": what follows it is the
// launched plugin's own arguments.
func splitPluginArgs(args []string) (own, plugin []string) {
	i := slices.Index(args, "--")
	if i < 0 {
		return args, nil
	}
	return args[:i], args[i+1:]
}

// parseCalls reads the SERVICE/METHOD [JSON] pairs after the plugin: a
// word that is not a method name is the request of the method before it.
// It reports a mistake itself, ending the message about a word that is
// not a method name with hint, and returns the exit code to use.
func parseCalls(pos []string, fromStdin bool, hint string, stdin io.Reader, stderr io.Writer) ([]call, int) {
	if fromStdin && len(pos) > 0 {
		fmt.Fprintf(stderr, "plugkit call: --stdin reads the calls from standard input: drop %q from the command line\nusage: %s\n", pos[0], callUsage)
		return nil, 2
	}
	var calls []call
	readStdin := false
	for i := 0; i < len(pos); i++ {
		if _, _, err := reflectcall.ParseMethodName(pos[i]); err != nil && !isServiceName(pos[i]) {
			fmt.Fprintf(stderr, "plugkit call: %v%s\n", err, hint)
			return nil, 2
		}
		cl := call{method: pos[i], request: []byte("{}")}
		if i+1 < len(pos) && !isMethodName(pos[i+1]) && !isServiceName(pos[i+1]) {
			i++
			cl.request = []byte(pos[i])
			if pos[i] == "-" {
				if readStdin {
					fmt.Fprintf(stderr, "plugkit call: only one request can come from standard input (-); give the others on the command line, or use --stdin\n")
					return nil, 2
				}
				readStdin = true
				b, err := io.ReadAll(io.LimitReader(stdin, maxRequestSize))
				if err != nil {
					fmt.Fprintf(stderr, "plugkit call: reading the request from standard input: %v\n", err)
					return nil, 1
				}
				cl.request = b
			}
		}
		calls = append(calls, cl)
	}
	for i := range calls {
		calls[i].label = calls[i].method
		if len(calls) > 1 {
			calls[i].label = fmt.Sprintf("call %d of %d (%s)", i+1, len(calls), calls[i].method)
		}
	}
	return calls, 0
}

// caller makes the calls of one plugkit call.
type caller struct {
	rc             *reflectcall.Client
	md             metadata.MD
	timeout        time.Duration
	compact        bool
	stdout, stderr io.Writer
}

// listInstead handles the command lines that list methods rather than
// call one: no method (list them all, exit 2), or a lone SERVICE the
// plugin has. done reports whether it handled the command line.
func (c *caller) listInstead(calls []call) (done bool, code int) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	if len(calls) == 0 {
		if err := listMethods(ctx, c.rc, c.stdout, ""); err != nil {
			fmt.Fprintf(c.stderr, "plugkit call: %s\n", oneLine(err))
			return true, 1
		}
		fmt.Fprintf(c.stderr, "plugkit call: name a method to call it: %s\n", callUsage)
		return true, 2
	}
	method := calls[0].method
	if strings.Contains(method, "/") {
		return false, 0
	}
	// SERVICE alone lists that service's methods. A name with a dot is a
	// service when the plugin has one by that name, and is read as
	// SERVICE.METHOD only otherwise.
	services, err := c.rc.Services(ctx)
	if err != nil {
		fmt.Fprintf(c.stderr, "plugkit call: %s\n", oneLine(err))
		return true, 1
	}
	if slices.Contains(services, method) {
		if err := listMethods(ctx, c.rc, c.stdout, method); err != nil {
			fmt.Fprintf(c.stderr, "plugkit call: %s\n", oneLine(err))
			return true, 1
		}
		return true, 0
	}
	if !isMethodName(method) {
		fmt.Fprintf(c.stderr, "plugkit call: the plugin has no service %q; it has %s\n", method, safe(strings.Join(services, ", ")))
		return true, 1
	}
	return false, 0
}

// call makes one call and prints its answers. It reports a failure
// itself, naming the call, and returns the exit code to use.
func (c *caller) call(cl call) int {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	ctx = metadata.NewOutgoingContext(ctx, c.md)
	fail := func(err error, code int) int {
		fmt.Fprintf(c.stderr, "plugkit call: %s: %s\n", safe(cl.label), oneLine(err))
		return code
	}
	mdesc, err := c.rc.Method(ctx, cl.method)
	if err != nil {
		return fail(err, 1)
	}
	req, err := c.rc.NewRequest(mdesc, cl.request)
	if err != nil {
		return fail(err, 2)
	}
	indent := !c.compact && !mdesc.IsStreamingServer()
	err = c.rc.Call(ctx, mdesc, req, func(m proto.Message) error {
		out, err := c.rc.Format(m, indent)
		if err != nil {
			return err
		}
		_, err = c.stdout.Write(append(out, '\n'))
		return err
	})
	if err != nil {
		return fail(err, 1)
	}
	return 0
}

// stdinCall is one line of --stdin.
type stdinCall struct {
	Method  string          `json:"method"`
	Request json.RawMessage `json:"request"`
}

// runStdin makes the calls read from r, one JSON object a line, each as
// soon as its line is read, and stops at the first that fails.
func (c *caller) runStdin(r io.Reader) int {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxRequestSize)
	line, n := 0, 0
	for sc.Scan() {
		line++
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		n++
		var in stdinCall
		dec := json.NewDecoder(bytes.NewReader(text))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&in); err != nil || in.Method == "" || dec.More() {
			if err == nil {
				err = fmt.Errorf("no method")
			}
			fmt.Fprintf(c.stderr, "plugkit call: call %d (stdin line %d): %s: want one JSON object a line, {\"method\":\"SERVICE/METHOD\",\"request\":{...}}\n", n, line, oneLine(err))
			return 2
		}
		cl := call{method: in.Method, request: in.Request, label: fmt.Sprintf("call %d (stdin line %d, %s)", n, line, in.Method)}
		if len(cl.request) == 0 || string(cl.request) == "null" {
			cl.request = []byte("{}")
		}
		if !isMethodName(cl.method) {
			fmt.Fprintf(c.stderr, "plugkit call: %s: %q is not a method name: want SERVICE/METHOD\n", safe(cl.label), cl.method)
			return 2
		}
		if code := c.call(cl); code != 0 {
			return code
		}
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintf(c.stderr, "plugkit call: reading the calls from standard input after line %d: %v\n", line, err)
		return 1
	}
	return 0
}

// callMetadata builds the metadata sent with the call: --name as the
// catalog's routing key, then each --metadata K=V.
func callMetadata(name string, pairs []string) (metadata.MD, error) {
	md := metadata.MD{}
	if name != "" {
		md.Set(wire.NameKey, name)
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
