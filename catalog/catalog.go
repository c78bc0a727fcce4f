package catalog

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/plugkit/plugkit/broker"
	catalogv1 "github.com/plugkit/plugkit/gen/plugkit/catalog/v1"
	"github.com/plugkit/plugkit/handshake"
	"github.com/plugkit/plugkit/plugin"
	"github.com/plugkit/plugkit/wire"
)

// SDKVersion is the plugkit version a plugin reports in Describe.
const SDKVersion = "0.1.0"

// Implementation is one (kind, major, name) a plugin serves. Build it with
// Implement, which checks the server's type.
type Implementation struct {
	Kind         string
	Major        int
	Minor        int
	Name         string
	Capabilities []string
	// Service is the generated ServiceDesc of the major's gRPC service.
	Service *grpc.ServiceDesc
	// Server implements Service.
	Server any
}

// Implement declares an implementation. S is the generated server
// interface of the major (objectstorev2.ObjectStoreServer), so the
// compiler checks server against it.
func Implement[S any](kind string, major, minor int, name string, service *grpc.ServiceDesc, server S, capabilities ...string) Implementation {
	return Implementation{Kind: kind, Major: major, Minor: minor, Name: name, Service: service, Server: server, Capabilities: capabilities}
}

// Catalog is the set of implementations a plugin binary serves.
type Catalog struct {
	version string
	groups  []*group // one per (kind, major), sorted by kind then major descending
}

type group struct {
	kind    string
	major   int
	minor   int
	service *grpc.ServiceDesc
	caps    []string
	impls   map[string]any
}

// New checks the implementations and returns their catalog. pluginVersion
// is the plugin release's semantic version.
func New(pluginVersion string, impls ...Implementation) (*Catalog, error) {
	if len(impls) == 0 {
		return nil, fmt.Errorf("catalog: no implementations: declare at least one with catalog.Implement")
	}
	byKey := map[[2]any]*group{}
	c := &Catalog{version: pluginVersion}
	for _, im := range impls {
		where := fmt.Sprintf("catalog: %s v%d %q", im.Kind, im.Major, im.Name)
		switch {
		case im.Kind == "" || strings.ContainsAny(im.Kind, " /"):
			return nil, fmt.Errorf("%s: kind must be a non-empty word", where)
		case im.Name == "":
			return nil, fmt.Errorf("%s: name is empty; use a qualified name such as example.com/fs", where)
		case im.Major < 0 || im.Minor < 0:
			return nil, fmt.Errorf("%s: versions must not be negative", where)
		case im.Service == nil || im.Server == nil:
			return nil, fmt.Errorf("%s: Service and Server are required", where)
		}
		if ht := reflect.TypeOf(im.Service.HandlerType).Elem(); !reflect.TypeOf(im.Server).Implements(ht) {
			return nil, fmt.Errorf("%s: %T does not implement %v", where, im.Server, ht)
		}
		key := [2]any{im.Kind, im.Major}
		g := byKey[key]
		if g == nil {
			g = &group{kind: im.Kind, major: im.Major, minor: im.Minor, service: im.Service, impls: map[string]any{}}
			byKey[key] = g
			c.groups = append(c.groups, g)
		}
		if g.service.ServiceName != im.Service.ServiceName {
			return nil, fmt.Errorf("%s: service %s, but another implementation of the same major uses %s", where, im.Service.ServiceName, g.service.ServiceName)
		}
		if _, dup := g.impls[im.Name]; dup {
			return nil, fmt.Errorf("%s: declared twice", where)
		}
		g.impls[im.Name] = im.Server
		// A major's minor and capabilities are what every implementation
		// of it offers: the lowest minor, the common capabilities.
		if len(g.impls) == 1 {
			g.minor, g.caps = im.Minor, slices.Clone(im.Capabilities)
		} else {
			g.minor = min(g.minor, im.Minor)
			g.caps = slices.DeleteFunc(g.caps, func(c string) bool { return !slices.Contains(im.Capabilities, c) })
		}
	}
	for _, g := range c.groups {
		sort.Strings(g.caps)
		g.caps = slices.Compact(g.caps)
	}
	sort.Slice(c.groups, func(i, j int) bool {
		if c.groups[i].kind != c.groups[j].kind {
			return c.groups[i].kind < c.groups[j].kind
		}
		return c.groups[i].major > c.groups[j].major
	})
	return c, nil
}

// Describe returns what Catalog/Describe answers.
func (c *Catalog) Describe() *catalogv1.DescribeResponse {
	resp := &catalogv1.DescribeResponse{PluginVersion: c.version, SdkVersion: SDKVersion}
	var kind *catalogv1.Kind
	for _, g := range c.groups {
		if kind == nil || kind.Name != g.kind {
			kind = &catalogv1.Kind{Name: g.kind}
			resp.Kinds = append(resp.Kinds, kind)
		}
		names := make([]string, 0, len(g.impls))
		for n := range g.impls {
			names = append(names, n)
		}
		sort.Strings(names)
		kind.Majors = append(kind.Majors, &catalogv1.Major{
			Major: uint32(g.major), Minor: uint32(g.minor), Service: g.service.ServiceName,
			Capabilities: g.caps, Names: names,
		})
	}
	return resp
}

// Register registers the catalog service and a routing service for each
// (kind, major) on s. It has the type of plugin.Register.
func (c *Catalog) Register(s *grpc.Server, _ *broker.Broker) error {
	catalogv1.RegisterCatalogServer(s, describer{c: c})
	for _, g := range c.groups {
		s.RegisterService(g.router(), struct{}{})
	}
	return nil
}

// Serve serves the catalog as a plugin and exits the process when done,
// like plugin.Serve. A host that asks only for the description
// (handshake.EnvDescribe, with the right cookie and the catalog protocol
// version among those it offers) gets it as one describe line on stdout
// (handshake.FormatDescribe), and the process exits 0 without serving.
func Serve(cookie handshake.Cookie, c *Catalog) {
	if line, ok := c.describeLine(os.LookupEnv, cookie); ok {
		if _, err := fmt.Fprintln(os.Stdout, line); err != nil {
			fmt.Fprintln(os.Stderr, "writing the description:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	plugin.Serve(plugin.Config{Cookie: cookie, Versions: map[int]plugin.Register{wire.CatalogProtocolVersion: c.Register}})
}

// Main is a plugin binary's whole main: it builds the catalog with
// newCatalog (the function the plugin's tests serve in-process through
// plugintest.ServeCatalog) and serves it with cookie, as Serve does. When
// newCatalog fails, Main prints its error to stderr and exits with status 1.
func Main(cookie handshake.Cookie, newCatalog func() (*Catalog, error)) {
	c, err := newCatalog()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	Serve(cookie, c)
}

// describeLine is the describe line Serve writes instead of serving, when
// the environment (lookup) asks for it with the right cookie and offers
// the catalog protocol version; ok is false otherwise, and when the
// description does not fit in a describe line (then it is served).
func (c *Catalog) describeLine(lookup func(string) (string, bool), cookie handshake.Cookie) (line string, ok bool) {
	env, err := handshake.ReadEnv(lookup, cookie)
	if err != nil || !env.Describe || !slices.Contains(env.Versions, wire.CatalogProtocolVersion) {
		return "", false // plugin.Serve says what is wrong, as without EnvDescribe
	}
	payload, err := proto.Marshal(c.Describe())
	if err != nil {
		return "", false
	}
	return handshake.FormatDescribe(payload)
}

type describer struct {
	catalogv1.UnimplementedCatalogServer
	c *Catalog
}

func (d describer) Describe(context.Context, *catalogv1.DescribeRequest) (*catalogv1.DescribeResponse, error) {
	return d.c.Describe(), nil
}

// pick finds the implementation a call names.
func (g *group) pick(ctx context.Context) (any, error) {
	var name string
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		if v := md.Get(wire.NameKey); len(v) > 0 {
			name = v[0]
		}
	}
	if name == "" {
		if len(g.impls) == 1 {
			for _, impl := range g.impls {
				return impl, nil
			}
		}
		return nil, status.Errorf(codes.InvalidArgument, "%s: this plugin serves several implementations (%s); name one in the %q metadata", g.service.ServiceName, g.names(), wire.NameKey)
	}
	impl, ok := g.impls[name]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "%s: no implementation named %q here; this plugin serves %s", g.service.ServiceName, name, g.names())
	}
	return impl, nil
}

func (g *group) names() string {
	names := make([]string, 0, len(g.impls))
	for n := range g.impls {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// router returns a copy of the major's ServiceDesc whose handlers pass
// each call to the implementation it names.
func (g *group) router() *grpc.ServiceDesc {
	desc := *g.service
	desc.HandlerType = (*any)(nil)
	desc.Methods = slices.Clone(g.service.Methods)
	for i := range desc.Methods {
		h := desc.Methods[i].Handler
		desc.Methods[i].Handler = func(_ any, ctx context.Context, dec func(any) error, ic grpc.UnaryServerInterceptor) (any, error) {
			impl, err := g.pick(ctx)
			if err != nil {
				return nil, err
			}
			return h(impl, ctx, dec, ic)
		}
	}
	desc.Streams = slices.Clone(g.service.Streams)
	for i := range desc.Streams {
		h := desc.Streams[i].Handler
		desc.Streams[i].Handler = func(_ any, stream grpc.ServerStream) error {
			impl, err := g.pick(stream.Context())
			if err != nil {
				return err
			}
			return h(impl, stream)
		}
	}
	return &desc
}
