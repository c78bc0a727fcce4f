package reflectcall

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

// Client resolves and calls the methods of one gRPC server by name. It
// keeps the descriptors it has fetched; it is safe for concurrent use.
type Client struct {
	conn grpc.ClientConnInterface

	mu          sync.Mutex
	preferAlpha bool // the server has only v1alpha
	files       *protoregistry.Files
}

// New returns a Client that calls through conn (such as
// host.Client.Conn()).
func New(conn grpc.ClientConnInterface) *Client {
	return &Client{conn: conn, files: new(protoregistry.Files)}
}

// Services lists the services the server reports through reflection,
// sorted.
func (c *Client) Services(ctx context.Context) ([]string, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	c.mu.Lock()
	defer c.mu.Unlock()
	_, names, err := c.open(ctx)
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	return names, nil
}

func (c *Client) open(ctx context.Context) (session, []string, error) {
	s, names, alpha, err := openSession(ctx, c.conn, c.preferAlpha)
	if err == nil {
		c.preferAlpha = alpha
	}
	return s, names, err
}

// ParseMethodName splits a method name into its service's full name and
// the method's name. It accepts "pkg.Service/Method" (as gRPC writes it,
// with or without the leading slash) and "pkg.Service.Method".
func ParseMethodName(name string) (service, method string, err error) {
	n := strings.TrimPrefix(strings.TrimSpace(name), "/")
	if i := strings.LastIndex(n, "/"); i >= 0 {
		service, method = n[:i], n[i+1:]
	} else if i := strings.LastIndex(n, "."); i >= 0 {
		service, method = n[:i], n[i+1:]
	}
	if service == "" || method == "" || strings.Contains(service, "/") ||
		!protoreflect.FullName(service).IsValid() || !protoreflect.Name(method).IsValid() {
		return "", "", fmt.Errorf("%q is not a method name: write SERVICE/METHOD with the service's full name, such as tfplugin6.Provider/GetProviderSchema", name)
	}
	return service, method, nil
}

// Method resolves a method by name (see ParseMethodName) through server
// reflection. An unknown service or method gets an error that lists what
// the server has.
func (c *Client) Method(ctx context.Context, name string) (protoreflect.MethodDescriptor, error) {
	service, method, err := ParseMethodName(name)
	if err != nil {
		return nil, err
	}
	sd, err := c.Service(ctx, service)
	if err != nil {
		return nil, err
	}
	md := sd.Methods().ByName(protoreflect.Name(method))
	if md == nil {
		var names []string
		for i := range sd.Methods().Len() {
			names = append(names, string(sd.Methods().Get(i).Name()))
		}
		sort.Strings(names)
		return nil, fmt.Errorf("service %s has no method %q; its methods: %s", service, method, strings.Join(names, ", "))
	}
	return md, nil
}

// Service resolves a service by its full name through server reflection.
func (c *Client) Service(ctx context.Context, service string) (protoreflect.ServiceDescriptor, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d, err := c.files.FindDescriptorByName(protoreflect.FullName(service)); err == nil {
		if sd, ok := d.(protoreflect.ServiceDescriptor); ok {
			return sd, nil
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s, names, err := c.open(ctx)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(names, service) {
		sort.Strings(names)
		return nil, fmt.Errorf("the server has no service %q; it has: %s", service, strings.Join(names, ", "))
	}
	raw, err := s.fileContainingSymbol(service)
	if err != nil {
		return nil, fmt.Errorf("fetching the descriptor of %s: %w", service, err)
	}
	fetched := map[string]*descriptorpb.FileDescriptorProto{}
	if err := addFiles(fetched, raw); err != nil {
		return nil, err
	}
	var target string
	for name, fdp := range fetched {
		if declaresService(fdp, service) {
			target = name
		}
	}
	if target == "" {
		return nil, fmt.Errorf("the server's reflection answered for %s with files that do not declare it", service)
	}
	if err := c.build(s, fetched, target, nil); err != nil {
		return nil, fmt.Errorf("building the descriptors of %s: %w", service, err)
	}
	d, err := c.files.FindDescriptorByName(protoreflect.FullName(service))
	if err != nil {
		return nil, err
	}
	sd, ok := d.(protoreflect.ServiceDescriptor)
	if !ok {
		return nil, fmt.Errorf("%s is a %T, not a service", service, d)
	}
	return sd, nil
}

func addFiles(into map[string]*descriptorpb.FileDescriptorProto, raw [][]byte) error {
	for _, b := range raw {
		fdp := new(descriptorpb.FileDescriptorProto)
		if err := proto.Unmarshal(b, fdp); err != nil {
			return fmt.Errorf("decoding a file descriptor sent by server reflection: %w", err)
		}
		into[fdp.GetName()] = fdp
	}
	return nil
}

func declaresService(fdp *descriptorpb.FileDescriptorProto, full string) bool {
	for _, sd := range fdp.GetService() {
		name := sd.GetName()
		if fdp.GetPackage() != "" {
			name = fdp.GetPackage() + "." + name
		}
		if name == full {
			return true
		}
	}
	return false
}

// build adds file name and, first, its dependencies to c.files, fetching
// dependencies the server did not send with the file.
func (c *Client) build(s session, fetched map[string]*descriptorpb.FileDescriptorProto, name string, stack []string) error {
	if _, err := c.files.FindFileByPath(name); err == nil {
		return nil
	}
	if slices.Contains(stack, name) {
		return fmt.Errorf("import cycle: %s", strings.Join(append(stack, name), " -> "))
	}
	fdp, ok := fetched[name]
	if !ok {
		raw, err := s.fileByFilename(name)
		if err != nil {
			return fmt.Errorf("fetching %s: %w", name, err)
		}
		if err := addFiles(fetched, raw); err != nil {
			return err
		}
		if fdp, ok = fetched[name]; !ok {
			return fmt.Errorf("the server's reflection did not send %s when asked for it", name)
		}
	}
	for _, dep := range fdp.GetDependency() {
		if err := c.build(s, fetched, dep, append(stack, name)); err != nil {
			return err
		}
	}
	fd, err := protodesc.NewFile(fdp, c.files)
	if err != nil {
		return err
	}
	return c.files.RegisterFile(fd)
}

// types resolves the message types of the fetched files, for JSON.
func (c *Client) types() *dynamicpb.Types {
	c.mu.Lock()
	defer c.mu.Unlock()
	return dynamicpb.NewTypes(c.files)
}

// NewRequest parses a request for md from protobuf JSON. Empty input
// means the empty message. Errors say where the input is wrong and, for
// an unknown field, which fields the message has.
func (c *Client) NewRequest(md protoreflect.MethodDescriptor, data []byte) (proto.Message, error) {
	msg := dynamicpb.NewMessage(md.Input())
	if len(bytes.TrimSpace(data)) == 0 {
		return msg, nil
	}
	err := protojson.UnmarshalOptions{Resolver: c.types()}.Unmarshal(data, msg)
	if err != nil {
		// protojson starts its errors with "proto:" and a space that is
		// sometimes a no-break space, on purpose.
		detail := strings.TrimLeft(strings.TrimPrefix(err.Error(), "proto:"), " \u00a0")
		hint := ""
		if strings.Contains(detail, "unknown field") {
			hint = "; " + string(md.Input().FullName()) + " has fields: " + fieldNames(md.Input())
		}
		return nil, fmt.Errorf("request JSON for %s (message %s): %s%s", md.FullName(), md.Input().FullName(), detail, hint)
	}
	return msg, nil
}

func fieldNames(m protoreflect.MessageDescriptor) string {
	var names []string
	for i := range m.Fields().Len() {
		names = append(names, m.Fields().Get(i).JSONName())
	}
	if len(names) == 0 {
		return "(none: send {})"
	}
	return strings.Join(names, ", ")
}

// Format writes msg as protobuf JSON: indented when indent is true, else
// on one line. Fields that hold their default value (false, 0, "", an
// empty list or map) are written too, so that a person reading the
// answer sees "exists": false rather than nothing; unset messages and
// oneofs are not. The output is stable (protojson's deliberate
// whitespace randomness is normalised away).
func (c *Client) Format(msg proto.Message, indent bool) ([]byte, error) {
	raw, err := protojson.MarshalOptions{Resolver: c.types(), EmitDefaultValues: true}.Marshal(msg)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if indent {
		err = json.Indent(&out, raw, "", "  ")
	} else {
		err = json.Compact(&out, raw)
	}
	if err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// ErrClientStreaming reports a method whose requests are a stream, which
// Call does not send.
var ErrClientStreaming = errors.New("client-streaming and bidirectional methods cannot be called with one request; only unary and server-streaming methods can")

// Call calls md with req and hands each response to each: once for a
// unary method, once per message for a server-streaming one. It stops at
// the first error each returns.
func (c *Client) Call(ctx context.Context, md protoreflect.MethodDescriptor, req proto.Message, each func(proto.Message) error, opts ...grpc.CallOption) error {
	if md.IsStreamingClient() {
		return fmt.Errorf("%s: %w", md.FullName(), ErrClientStreaming)
	}
	method := "/" + string(md.Parent().FullName()) + "/" + string(md.Name())
	if !md.IsStreamingServer() {
		resp := dynamicpb.NewMessage(md.Output())
		if err := c.conn.Invoke(ctx, method, req, resp, opts...); err != nil {
			return err
		}
		return each(resp)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := c.conn.NewStream(ctx, &grpc.StreamDesc{StreamName: string(md.Name()), ServerStreams: true}, method, opts...)
	if err != nil {
		return err
	}
	if err := stream.SendMsg(req); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	if err := stream.CloseSend(); err != nil {
		return err
	}
	for {
		resp := dynamicpb.NewMessage(md.Output())
		err := stream.RecvMsg(resp)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := each(resp); err != nil {
			return err
		}
	}
}

// CallJSON resolves name, parses the request from JSON, calls, and hands
// each response, formatted as by Format, to each.
func (c *Client) CallJSON(ctx context.Context, name string, request []byte, indent bool, each func([]byte) error, opts ...grpc.CallOption) error {
	md, err := c.Method(ctx, name)
	if err != nil {
		return err
	}
	req, err := c.NewRequest(md, request)
	if err != nil {
		return err
	}
	return c.Call(ctx, md, req, func(m proto.Message) error {
		out, err := c.Format(m, indent)
		if err != nil {
			return err
		}
		return each(out)
	}, opts...)
}
