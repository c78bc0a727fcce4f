package tfserve

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/hashicorp/terraform-plugin-go/tfprotov5"
	"github.com/hashicorp/terraform-plugin-go/tfprotov5/tf5server"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6/tf6server"
	"github.com/hashicorp/terraform-plugin-mux/tf6to5server"
	"google.golang.org/grpc"

	"github.com/plugkit/plugkit/broker"
	"github.com/plugkit/plugkit/handshake"
	"github.com/plugkit/plugkit/plugin"
)

// CookieKey and CookieValue are Terraform's magic cookie: Terraform Core
// sets CookieKey=CookieValue in the environment of every provider it
// launches, and a provider refuses to start without it.
const (
	CookieKey   = "TF_PLUGIN_MAGIC_COOKIE"
	CookieValue = "d602bf8f470bc67ca7faa0386276bbdd4330efaf76d1a219cb4d6991ca9872b2"
)

// Cookie is Terraform's magic cookie as a handshake.Cookie, for hosts
// (host.Command.Cookie) and plugins alike.
var Cookie = handshake.Cookie{Key: CookieKey, Value: CookieValue}

// Protocol versions of the Terraform plugin protocol.
const (
	// Protocol5 is served as gRPC service tfplugin5.Provider.
	Protocol5 = 5
	// Protocol6 is served as gRPC service tfplugin6.Provider.
	Protocol6 = 6
)

// Config describes a provider to serve. Name and at least one of V6 and
// V5 are required.
type Config struct {
	// Name is the provider's source address, such as
	// "registry.terraform.io/example/demo". terraform-plugin-go uses it to
	// label log records and to name the TF_LOG_PROVIDER_* variable.
	Name string

	// V6 returns the provider as a protocol 6 server. It is called once,
	// when the plugin starts, after the version is negotiated (and once
	// more to check the schema when protocol 5 is served from it).
	V6 func() tfprotov6.ProviderServer
	// V5 returns the provider as a protocol 5 server. When it is nil and
	// V6 is set, protocol 5 is served by downgrading V6 with
	// terraform-plugin-mux's tf6to5server, unless V6Only is set.
	V5 func() tfprotov5.ProviderServer
	// V6Only offers protocol 6 alone even though V6 could be downgraded.
	V6Only bool

	// ServeOpts6 are passed to terraform-plugin-go's protocol 6 server:
	// its logging options apply; its debug options (WithManagedDebug,
	// WithDebug) belong to tf6server.Serve and have no effect here.
	ServeOpts6 []tf6server.ServeOpt
	// ServeOpts5 are passed to terraform-plugin-go's protocol 5 server,
	// as ServeOpts6 are to the protocol 6 one.
	ServeOpts5 []tf5server.ServeOpt

	// Debug serves the provider in debug mode, as terraform-plugin-go's
	// WithManagedDebug does (a provider sets it from its -debug flag):
	// without Terraform, under a debugger, until interrupted. It prints
	// TF_REATTACH_PROVIDERS='{...}' (see DebugAnnounce); Terraform or
	// OpenTofu run with that variable use this process instead of
	// launching the provider, and leave it running. PLUGKIT_DEBUG=1 in
	// the provider's environment does the same.
	Debug bool

	// Plugin is the plugkit plugin configuration to start from: its
	// Logger, ServerOptions, MaxMessageSize, ShutdownTimeout, Limits and
	// TLSProvider are used as they are, and its Debug as Debug above.
	// Cookie and Versions are set by tfserve and must be left zero; Name
	// is replaced by Config.Name, and DebugAnnounce defaults to tfserve's
	// DebugAnnounce.
	Plugin plugin.Config
}

// PluginConfig returns the plugin.Config that serves the provider:
// Terraform's cookie and a Register function for each protocol version.
// Use it with plugin.Run to serve inside a program of your own; most
// providers call Serve.
func (c Config) PluginConfig() (plugin.Config, error) {
	if c.Name == "" {
		return plugin.Config{}, errors.New("tfserve: Config.Name is empty: give the provider's source address, such as registry.terraform.io/example/demo")
	}
	if c.V6 == nil && c.V5 == nil {
		return plugin.Config{}, errors.New("tfserve: Config.V6 and Config.V5 are both nil: give the function that returns the provider server")
	}
	if c.Plugin.Cookie != (handshake.Cookie{}) || c.Plugin.Versions != nil {
		return plugin.Config{}, errors.New("tfserve: Config.Plugin.Cookie and Config.Plugin.Versions are set by tfserve: leave them zero")
	}
	// terraform-plugin-go's servers panic on an option that fails to
	// apply (its Serve checks them first); check them here.
	for _, opt := range c.ServeOpts6 {
		if err := opt.ApplyServeOpt(&tf6server.ServeConfig{}); err != nil {
			return plugin.Config{}, fmt.Errorf("tfserve: Config.ServeOpts6: %w", err)
		}
	}
	for _, opt := range c.ServeOpts5 {
		if err := opt.ApplyServeOpt(&tf5server.ServeConfig{}); err != nil {
			return plugin.Config{}, fmt.Errorf("tfserve: Config.ServeOpts5: %w", err)
		}
	}
	pc := c.Plugin
	pc.Cookie = Cookie
	pc.Name = c.Name
	pc.Debug = pc.Debug || c.Debug
	if pc.DebugAnnounce == nil {
		pc.DebugAnnounce = DebugAnnounce
	}
	pc.Versions = map[int]plugin.Register{}
	if c.V6 != nil {
		pc.Versions[Protocol6] = c.register6
	}
	switch {
	case c.V5 != nil:
		pc.Versions[Protocol5] = c.register5(c.V5)
	case !c.V6Only:
		pc.Versions[Protocol5] = c.registerDowngraded
	}
	return pc, nil
}

// register6 registers tfplugin6.Provider. terraform-plugin-go's provider
// server does not use go-plugin's broker, so none is passed.
func (c Config) register6(s *grpc.Server, _ *broker.Broker) error {
	p := &tf6server.GRPCProviderPlugin{GRPCProvider: c.V6, Name: c.Name, Opts: c.ServeOpts6}
	return p.GRPCServer(nil, s)
}

func (c Config) register5(factory func() tfprotov5.ProviderServer) plugin.Register {
	return func(s *grpc.Server, _ *broker.Broker) error {
		p := &tf5server.GRPCProviderPlugin{GRPCProvider: factory, Name: c.Name, Opts: c.ServeOpts5}
		return p.GRPCServer(nil, s)
	}
}

// registerDowngraded serves the v6 provider as protocol 5. The downgrade
// reads the schema, so it runs only when 5 was negotiated.
func (c Config) registerDowngraded(s *grpc.Server, b *broker.Broker) error {
	v5, err := tf6to5server.DowngradeServer(context.Background(), c.V6)
	if err != nil {
		return fmt.Errorf("tfserve: serving %s as protocol 5 (the host offered no 6): %w; offer protocol 6 from the host, or give Config.V5", c.Name, err)
	}
	return c.register5(func() tfprotov5.ProviderServer { return v5 })(s, b)
}

// Run serves the provider until ctx ends or the host stops it; see
// plugin.Run.
func Run(ctx context.Context, cfg Config) error {
	pc, err := cfg.PluginConfig()
	if err != nil {
		return err
	}
	return plugin.Run(ctx, pc)
}

// Serve serves the provider and exits the process when the host is done
// with it, as plugin.Serve does: status 0 after a requested stop, 1 after
// an error, which is written to standard error first. Run by hand (without
// Terraform's cookie) the binary says it is a plugin and exits 1.
func Serve(cfg Config) {
	pc, err := cfg.PluginConfig()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	plugin.Serve(pc)
}
