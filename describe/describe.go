package describe

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	catalogv1 "github.com/plugkit/plugkit/gen/plugkit/catalog/v1"
	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/hostwire"
)

// DefaultTimeout bounds one plugin's start and description where the
// caller sets no bound of its own: a manager's (Config.DescribeTimeout
// 0), and release's Install and Push.
const DefaultTimeout = 15 * time.Second

// MaxNames bounds the implementation names one Describe answer may hold,
// counted over all its kinds and majors: a catalog names a few, a
// hundred at most; an answer naming more is refused as malformed (Check).
// With it, what a manager keeps of the answers (its registry, its
// duplicate problems) stays within a small constant times the bytes of
// the answers.
const MaxNames = 10000

// maxAnswer bounds a Describe answer over gRPC: a catalog of a few kinds,
// majors and names takes a few KiB; a bigger answer is broken or
// hostile, and is neither kept in memory nor cached. (A describe line is
// bounded by handshake.MaxDescribeLine.)
const maxAnswer = 1 << 20

// compiler is a runner for modules that compiles one ahead of its start
// (wasmhost.Runtime is one).
type compiler interface {
	CompileFile(ctx context.Context, path string) error
}

// startDescribing is host's start that asks for the description only
// (internal/hostwire; host sets it in its init, before this
// package's variables are initialised).
var startDescribing = hostwire.DescribeStart.(func(context.Context, host.Command, host.Options) ([]byte, *host.Client, error))

// Start launches the plugin cmd names as host.Start does (the same
// Command settings, pin check, Runner or GuestRunner, and timeouts) and
// asks it, with handshake.EnvDescribe, for its description only. A
// plugkit catalog plugin, native or WebAssembly, writes it on a describe
// line and exits: Start returns it, decoded and checked (Check), and a
// nil Client, once the process has exited 0 and is reaped. Any other
// plugin ignores the request and answers with its handshake line: it is
// connected to as host.Start connects, and Start returns its Client and
// no description; describe it with Conn(ctx, c.Conn()), then Close it
// (or keep it, as a manager with KeepDescribed does). ctx bounds the
// start; opts.Versions must offer wire.CatalogProtocolVersion for a
// catalog plugin to answer by line.
func Start(ctx context.Context, cmd host.Command, opts host.Options) (*catalogv1.DescribeResponse, *host.Client, error) {
	payload, c, err := startDescribing(ctx, cmd, opts)
	if err != nil || c != nil {
		return nil, c, err
	}
	d := &catalogv1.DescribeResponse{}
	if err := proto.Unmarshal(payload, d); err != nil {
		return nil, nil, fmt.Errorf("plugin %s: its describe line holds no DescribeResponse: %w; fix the plugin", filepath.Base(cmd.Path), err)
	}
	if err := Check(d); err != nil {
		return nil, nil, err
	}
	return d, nil, nil
}

// Run describes the plugin cmd names and leaves nothing running: Start,
// and for a plugin that started instead of answering by line, Conn and
// Close. timeout bounds all of it (0 means DefaultTimeout), whatever
// ctx's deadline; an error past it names the bound. A WebAssembly module
// whose cmd.Runner compiles ahead (wasmhost.Runtime's CompileFile) is
// compiled first, within ctx but outside timeout: a large module's
// compile takes seconds, unless the runner's compilation cache has it.
func Run(ctx context.Context, cmd host.Command, opts host.Options, timeout time.Duration) (*catalogv1.DescribeResponse, error) {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	if c, ok := cmd.Runner.(compiler); ok && hostwire.IsWasm(cmd.Path) {
		if err := c.CompileFile(ctx, cmd.Path); err != nil {
			return nil, err
		}
	}
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	late := func(err error) error {
		// The plugin's gRPC server enforces the deadline too (it gets it
		// in grpc-timeout) and may answer DeadlineExceeded a moment
		// before dctx's own timer fires: that is this timeout as well.
		if err != nil && ctx.Err() == nil && (dctx.Err() != nil || status.Code(err) == codes.DeadlineExceeded) {
			return fmt.Errorf("the plugin did not start and answer Describe within %v, as the manager requires: fix the plugin (%w)", timeout, err)
		}
		return err
	}
	d, c, err := Start(dctx, cmd, opts)
	if err != nil || c == nil {
		// The deadline may run out during the start itself (its health
		// check, on a loaded machine): name it there too.
		return d, late(err)
	}
	defer c.Close()
	d, err = Conn(dctx, c.Conn())
	return d, late(err)
}

// Conn asks the catalog plugin on cc for its description over gRPC
// (plugkit.catalog.v1.Catalog/Describe): at most 1 MiB of it (a bigger
// answer is refused, not kept), checked (Check). A plugin that serves no
// catalog is named as such.
func Conn(ctx context.Context, cc grpc.ClientConnInterface) (*catalogv1.DescribeResponse, error) {
	d, err := catalogv1.NewCatalogClient(cc).Describe(ctx, &catalogv1.DescribeRequest{}, grpc.MaxCallRecvMsgSize(maxAnswer))
	switch status.Code(err) {
	case codes.OK:
	case codes.ResourceExhausted:
		return nil, fmt.Errorf("catalog Describe: the answer is larger than the %d bytes a description may be: the plugin's catalog is broken; fix the plugin (%w)", maxAnswer, err)
	case codes.Unimplemented:
		return nil, fmt.Errorf("catalog Describe: it serves no plugkit.catalog.v1.Catalog: it is a plain go-plugin plugin, not a plugkit kinds plugin; load it with host.Start (%w)", err)
	default:
		return nil, fmt.Errorf("catalog Describe: %w", err)
	}
	if err := Check(d); err != nil {
		return nil, err
	}
	return d, nil
}

// Check refuses a Describe answer a host cannot use: one naming more
// than MaxNames implementations, a kind without a name, a major 0, a
// major without names or with an empty one. (A plugin can still claim a
// major it does not serve: a manager's calls then say so.)
func Check(d *catalogv1.DescribeResponse) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("catalog Describe: the answer is malformed: %s; fix the plugin's catalog", fmt.Sprintf(format, args...))
	}
	total := 0
	for _, k := range d.GetKinds() {
		for _, maj := range k.GetMajors() {
			total += len(maj.GetNames())
		}
	}
	if total > MaxNames {
		return bad("it names %d implementations, more than the %d one answer may (describe.MaxNames); split the plugin's catalog over several binaries", total, MaxNames)
	}
	for i, k := range d.GetKinds() {
		if k.GetName() == "" {
			return bad("kind #%d has no name", i+1)
		}
		for _, maj := range k.GetMajors() {
			if maj.GetMajor() == 0 {
				return bad("kind %q has a major 0 (majors start at 1)", k.GetName())
			}
			if len(maj.GetNames()) == 0 {
				return bad("kind %q major %d names no implementation", k.GetName(), maj.GetMajor())
			}
			for _, n := range maj.GetNames() {
				if n == "" {
					return bad("kind %q major %d has an empty implementation name", k.GetName(), maj.GetMajor())
				}
			}
		}
	}
	return nil
}
