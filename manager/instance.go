package manager

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/plugkit/plugkit/host"
)

// instance is one running process (or connection, for a plugin service)
// of one release of a plugin. Every call through a Conn holds the
// instance it started on until it ends, so that an upgrade knows when
// the old one has drained.
type instance struct {
	bin    found
	path   string // bin's Location.String()
	client *host.Client
	gen    int

	mu      sync.Mutex
	calls   map[*callRef]struct{} // in flight
	retired bool                  // serves no new call
	idle    chan struct{}         // closed once retired with no call in flight
	cut     error                 // why the calls still in flight were ended (the drain deadline)
	watch   *verdict              // the calls' outcomes, while on probation
}

func newInstance(bin found, c *host.Client, gen int) *instance {
	return &instance{bin: bin, path: bin.Location.String(), client: c, gen: gen, calls: map[*callRef]struct{}{}}
}

// version is the instance's release version.
func (in *instance) version() string { return in.bin.Description.GetPluginVersion() }

// release names the instance in Status and UpgradeResult.
func (in *instance) release() Release {
	r := Release{Version: in.version(), Path: in.path, Origin: in.bin.Origin, SHA256: in.bin.SHA256}
	select {
	case <-in.client.Exited():
	default:
		r.Pid = in.client.Pid()
	}
	return r
}

// event is a lifecycle event of the instance's plugin.
func (in *instance) event(typ host.EventType, pid int, cause error) host.Event {
	return pluginEvent(typ, in.path, in.version(), pid, cause)
}

// pluginEvent is a lifecycle event of the plugin at path, whose release
// version is version.
func pluginEvent(typ host.EventType, path, version string, pid int, cause error) host.Event {
	e := host.Event{Type: typ, Plugin: filepath.Base(path), Binary: path, Pid: pid, Cause: cause}
	if version != "" {
		e.Attributes = []attribute.KeyValue{versionAttribute(version)}
	}
	return e
}

// callRef is one call in flight on an instance: cancel ends it when the
// drain deadline passes.
type callRef struct {
	cancel context.CancelCauseFunc
}

// hold counts ref in flight on the instance. The process's lock is held,
// so the instance is not retired meanwhile.
func (in *instance) hold(ref *callRef) {
	in.mu.Lock()
	in.calls[ref] = struct{}{}
	in.mu.Unlock()
}

// done ends ref's hold.
func (in *instance) done(ref *callRef) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if _, ok := in.calls[ref]; !ok {
		return
	}
	delete(in.calls, ref)
	if in.retired && len(in.calls) == 0 {
		close(in.idle)
	}
}

// retire makes the instance serve no new call and returns the channel
// closed once its calls in flight have ended.
func (in *instance) retire() <-chan struct{} {
	in.mu.Lock()
	defer in.mu.Unlock()
	if !in.retired {
		in.retired, in.idle = true, make(chan struct{})
		if len(in.calls) == 0 {
			close(in.idle)
		}
	}
	return in.idle
}

// reinstate makes a retired instance serve again (a rollback).
func (in *instance) reinstate() {
	in.mu.Lock()
	in.retired, in.idle, in.cut = false, nil, nil
	in.mu.Unlock()
}

// cutCalls ends the calls still in flight with cause.
func (in *instance) cutCalls(cause error) {
	in.mu.Lock()
	in.cut = cause
	calls := make([]*callRef, 0, len(in.calls))
	for ref := range in.calls {
		calls = append(calls, ref)
	}
	in.mu.Unlock()
	for _, ref := range calls {
		ref.cancel(cause)
	}
}

// inFlight is how many calls are in flight on the instance.
func (in *instance) inFlight() int {
	in.mu.Lock()
	defer in.mu.Unlock()
	return len(in.calls)
}

// upgradedError is the cause of a call ended at the drain deadline of an
// upgrade: the plugin's path, the release the call ran on, and the
// release that took over.
type upgradedError struct {
	path, from, to string
}

func (e *upgradedError) Error() string {
	return fmt.Sprintf("plugin %s was upgraded from %s to %s while this call ran on the old release, which did not finish it within the drain deadline (Config.Upgrade.Drain): make the call again (it goes to the new release), or raise the drain deadline",
		e.path, e.from, e.to)
}

// upgradedStatus is the error of a call whose context ended for cause:
// codes.Unavailable naming the upgrade when the drain deadline ended it,
// err otherwise.
func upgradedStatus(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if ue, ok := context.Cause(ctx).(*upgradedError); ok {
		return status.Error(codes.Unavailable, ue.Error())
	}
	return err
}

// verdict counts the outcomes of the calls on a new release on
// probation (see UpgradePolicy.Failures).
type verdict struct {
	limit    int
	mu       sync.Mutex
	ok, bad  int
	lastErr  error
	failing  chan struct{} // closed when bad reaches limit with no ok
	signaled bool
}

// record counts one call's outcome: err nil, or a plugin's answer that
// is no failure of the process, is a success.
func (v *verdict) record(err error, answered bool) {
	if v == nil {
		return
	}
	fail := err != nil && (!answered || failureCode(status.Code(err)))
	v.mu.Lock()
	defer v.mu.Unlock()
	if !fail {
		v.ok++
		return
	}
	v.bad++
	v.lastErr = err
	if v.ok == 0 && v.bad >= v.limit && !v.signaled {
		v.signaled = true
		close(v.failing)
	}
}

// failureCode reports whether a plugin's answer with code is a failure
// of the release rather than an answer about the request.
func failureCode(c codes.Code) bool {
	switch c {
	case codes.Internal, codes.Unknown, codes.Unavailable, codes.DataLoss, codes.Unimplemented:
		return true
	}
	return false
}

// verdictOf returns the instance's verdict, nil when not on probation.
func (in *instance) verdict() *verdict {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.watch
}
