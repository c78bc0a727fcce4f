package manager

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/wire"
)

// Outcome says how an upgrade of a plugin ended.
type Outcome string

// The outcomes of Manager.Upgrade and Manager.Refresh.
const (
	// UpgradeUnchanged: the sources hold the same plugin as the one
	// serving (same path and SHA-256, or the same endpoints); nothing
	// was started.
	UpgradeUnchanged Outcome = "unchanged"
	// UpgradeIdle: no process of the plugin was running; the registry
	// now names the new plugin, which the next Dispense starts.
	UpgradeIdle Outcome = "idle"
	// UpgradeRefused: the new plugin failed a check before any call
	// moved (its pin, its Describe answer, a major the host uses, its
	// start, its health); the old process keeps serving.
	UpgradeRefused Outcome = "refused"
	// UpgradeCompleted: calls moved to the new process, which lived
	// through its probation; the old process drained and was closed.
	UpgradeCompleted Outcome = "completed"
	// UpgradeRolledBack: calls moved to the new process, which failed
	// within its probation (Cause says how); calls went back to the old
	// process, which serves on, and the new one was closed.
	UpgradeRolledBack Outcome = "rolled back"
)

// Release is one plugin process's release, as Status and UpgradeResult
// name it.
type Release struct {
	// Version is the plugin's release version (its Describe answer).
	Version string
	// Path is where it is: a binary's path, or a plugin service's
	// endpoints (Location.String()).
	Path   string
	Origin Origin
	// SHA256 is a binary's checksum, when known.
	SHA256 string
	// Pid is its process, 0 when none runs (or a plugin service).
	Pid int
	// InFlight is how many calls and streams run on it (Status only).
	InFlight int
}

// UpgradeResult says what an upgrade of one plugin process did.
type UpgradeResult struct {
	// Kind and Name are the implementation asked for (Upgrade), or the
	// first one dispensed from the process (Refresh).
	Kind, Name string
	// Names are every (kind, name) the process serves that moved with
	// it, as "kind/name": an upgrade moves the whole process.
	Names []string
	// From is the release that served before, To the new one.
	From, To Release
	Outcome  Outcome
	// Cause says why an upgrade was refused or rolled back.
	Cause error
	// Switch is the time from the start of the upgrade (the sources'
	// Find included) to calls moving to the new release, 0 when none
	// moved; Took is the time to its outcome (for a completed upgrade:
	// to the end of the probation and the old process's close).
	Switch, Took time.Duration
}

// PluginStatus is what serves one (kind, name) that has been dispensed,
// and what drains (see Manager.Status).
type PluginStatus struct {
	Kind, Name string
	// Serving is the release new calls go to.
	Serving Release
	// Draining are older releases still running: finishing their calls
	// in flight (within UpgradePolicy.Drain), or kept to roll back to
	// until the probation of Serving ends.
	Draining []Release
	// Probation, when not zero, is when the probation of Serving ends.
	Probation time.Time
}

// Upgrade runs the sources' Find again (as Discover does) and, when the
// plugin that implements (kind, name) changed (a new path, the same path
// with a new SHA-256, a plugin service's new endpoints), moves the
// process that serves it to the new plugin: checked before any call
// moves (its pin, its Describe answer, every major dispensed from the
// old process), started, re-initialised by every Conn's OnRestart hooks
// and health checked; then new calls and streams go to it while the old
// process finishes its calls in flight (Config.Upgrade.Drain); a new
// process that crashes, fails its health check or answers only errors
// within Config.Upgrade.Probation is rolled back. Every (kind, name) the
// process serves moves with it. Upgrade returns at the outcome; its
// error is the result's Cause for an upgrade refused or rolled back, and
// says so for one that could not be tried (Discover failed, the Manager
// is closed). ctx bounds the checks and the start; once calls moved, the
// probation and the drain run to their ends (both bounded by
// Config.Upgrade).
func (m *Manager) Upgrade(ctx context.Context, kind, name string) (UpgradeResult, error) {
	begun := time.Now()
	res := UpgradeResult{Kind: kind, Name: name}
	if err := m.Discover(ctx); err != nil {
		return res, fmt.Errorf("upgrading %s %q: %w", kind, name, err)
	}
	m.mu.Lock()
	e, ok := m.registry[regKey{kind, name}]
	m.mu.Unlock()
	p := m.serving(kind, name)
	switch {
	case !ok && p == nil:
		_, err := m.Lookup(kind, name)
		return res, err
	case !ok:
		if bad := m.unusableAt(p.pathNow()); bad != nil {
			// The release at the same place cannot be used (a pin it
			// fails, say): the upgrade to it is refused, saying why.
			return p.upgrade(ctx, begun, *bad, kind, name)
		}
		res.Outcome = UpgradeRefused
		res.Cause = fmt.Errorf("plugin %s %q is no longer in the sources (searched %s); the running release %s keeps serving: put a release back, or close its Conns", kind, name, m.searched(), p.pathNow())
		return res, res.Cause
	case p == nil:
		res.Outcome = UpgradeIdle
		res.To = foundRelease(*e.binary)
		return res, nil
	}
	return p.upgrade(ctx, begun, *e.binary, kind, name)
}

// Refresh runs the sources' Find again (as Discover does) and upgrades,
// as Upgrade does, every running process whose plugin changed, one
// result per process, in parallel; a release rolled back before is not
// tried again until it changes again, and a plugin no longer in the
// sources keeps its process (Upgrade says so). A refresh that finds
// nothing changed starts nothing and returns no result. Its error is
// Discover's.
func (m *Manager) Refresh(ctx context.Context) ([]UpgradeResult, error) {
	begun := time.Now()
	if err := m.Discover(ctx); err != nil {
		return nil, err
	}
	type job struct {
		p          *process
		kind, name string
		to         found
	}
	var jobs []job
	var results []UpgradeResult
	for _, p := range m.processes() {
		keys := p.names()
		if len(keys) == 0 {
			continue
		}
		cur := p.binNow()
		m.mu.Lock()
		targets := map[string]found{}
		for _, k := range keys {
			if e, ok := m.registry[k]; ok {
				targets[releaseKey(*e.binary)] = *e.binary
			}
		}
		rolledBack := maps.Clone(m.rolledBack)
		m.mu.Unlock()
		if len(targets) > 1 {
			var paths []string
			for _, f := range targets {
				paths = append(paths, f.Location.String())
			}
			sort.Strings(paths)
			cause := fmt.Errorf("the names plugin %s serves now come from several plugins (%s); a process upgrades as a whole: keep its names in one binary, or close the Conns of the names that moved and Dispense them again", cur.Location.String(), strings.Join(paths, ", "))
			results = append(results, UpgradeResult{Kind: keys[0].kind, Name: keys[0].name, Names: keyNames(keys), From: foundRelease(cur), Outcome: UpgradeRefused, Cause: cause})
			continue
		}
		for k, to := range targets {
			if changed(cur, to) && rolledBack[placeKey(to)].bad != k {
				jobs = append(jobs, job{p, keys[0].kind, keys[0].name, to})
			}
		}
	}
	out := make([]UpgradeResult, len(jobs))
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Go(func() { out[i], _ = j.p.upgrade(ctx, begun, j.to, j.kind, j.name) })
	}
	wg.Wait()
	results = append(results, out...)
	sort.Slice(results, func(i, j int) bool {
		return results[i].Kind+"\x00"+results[i].Name < results[j].Kind+"\x00"+results[j].Name
	})
	return results, nil
}

// Status lists, per (kind, name) that has been dispensed, the release
// that serves it and those that drain, ordered by kind and name.
func (m *Manager) Status() []PluginStatus {
	var out []PluginStatus
	for _, p := range m.processes() {
		keys := p.names()
		if len(keys) == 0 {
			continue
		}
		var st PluginStatus
		p.lock <- struct{}{}
		if p.cur != nil {
			st.Serving = p.cur.release()
			st.Serving.InFlight = p.cur.inFlight()
		} else {
			st.Serving = foundRelease(p.bin)
		}
		for _, in := range p.retired {
			r := in.release()
			r.InFlight = in.inFlight()
			st.Draining = append(st.Draining, r)
		}
		if p.trial != nil {
			st.Probation = p.trial.ends
		}
		p.release()
		for _, k := range keys {
			st.Kind, st.Name = k.kind, k.name
			st.Draining = slices.Clone(st.Draining)
			out = append(out, st)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].Kind+"\x00"+out[i].Name < out[j].Kind+"\x00"+out[j].Name
	})
	return out
}

// unusableAt is the entry the last Discover found at where that cannot be
// used, if any.
func (m *Manager) unusableAt(where string) *found {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, f := range m.found {
		if f.Err != nil && f.Location.String() == where {
			return f
		}
	}
	return nil
}

// processes are the Manager's plugin processes.
func (m *Manager) processes() []*process {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append(slices.Collect(maps.Values(m.procs)), m.moved...)
}

// serving is the process whose Conns serve (kind, name), nil when none
// was dispensed (or all its Conns are closed).
func (m *Manager) serving(kind, name string) *process {
	for _, p := range m.processes() {
		if slices.Contains(p.names(), regKey{kind, name}) {
			return p
		}
	}
	return nil
}

// names are the (kind, name)s of the process's open Conns, sorted.
func (p *process) names() []regKey {
	p.connsMu.Lock()
	defer p.connsMu.Unlock()
	var keys []regKey
	for c := range p.conns {
		keys = append(keys, regKey{c.kind, c.name})
	}
	slices.SortFunc(keys, func(a, b regKey) int { return cmp.Or(cmp.Compare(a.kind, b.kind), cmp.Compare(a.name, b.name)) })
	return slices.Compact(keys)
}

func keyNames(keys []regKey) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k.kind + "/" + k.name
	}
	return out
}

// binNow and pathNow are the release the process starts from now.
func (p *process) binNow() found {
	p.lock <- struct{}{}
	defer p.release()
	return p.bin
}

func (p *process) pathNow() string {
	b := p.binNow()
	return b.Location.String()
}

// releaseKey names a release: where it is and its checksum.
func releaseKey(f found) string {
	return string(f.Origin) + "\x00" + f.Location.String() + "\x00" + f.SHA256
}

// rollback is a release rolled back (its releaseKey) and the one rolled
// back to.
type rollback struct {
	bad string
	to  found
}

// placeKey names where a release is.
func placeKey(f found) string { return string(f.Origin) + "\x00" + f.Location.String() }

// changed reports whether to is another release than from.
func changed(from, to found) bool { return releaseKey(from) != releaseKey(to) }

func foundRelease(f found) Release {
	return Release{Version: f.Description.GetPluginVersion(), Path: f.Location.String(), Origin: f.Origin, SHA256: f.SHA256}
}

// foundName is "v1.2.0 (path)" for messages.
func foundName(f found) string {
	if v := f.Description.GetPluginVersion(); v != "" {
		return fmt.Sprintf("v%s (%s)", v, f.Location.String())
	}
	return f.Location.String()
}

// trial is an upgrade on probation: the release to roll back to.
type trial struct {
	old    *instance // nil when no process of the old release ran
	oldBin found
	newIn  *instance
	ends   time.Time
	rolled chan struct{} // closed by rollbackLocked
	cause  error         // why it was rolled back
	hung   bool          // rolled back for its health: killed, not drained
}

// rollbackLocked moves calls back to the old release of the upgrade on
// probation, for cause. p.lock is held.
func (p *process) rollbackLocked(cause error) {
	t := p.trial
	if t == nil {
		return
	}
	p.trial, t.cause = nil, cause
	p.bin, p.path = t.oldBin, t.oldBin.Location.String()
	p.restarts, p.gaveUp, p.lastErr, p.stale = 0, false, nil, nil
	p.cur = nil
	if t.old != nil && alive(t.old) {
		t.old.reinstate()
		p.retired = slices.DeleteFunc(p.retired, func(in *instance) bool { return in == t.old })
		p.cur, p.started = t.old, time.Now()
	}
	t.newIn.retire()
	p.retired = append(p.retired, t.newIn)
	for _, c := range p.connList() {
		c.mu.Lock()
		if t.old != nil && c.gen == t.newIn.gen && c.prevGen == t.old.gen && p.cur == t.old {
			c.gen = c.prevGen // its hooks ran on the old process already
		}
		c.mu.Unlock()
	}
	p.m.rekey(p, t.newIn.bin, t.oldBin)
	close(t.rolled)
}

// brokeOnProbation rolls back the upgrade whose new process, in, failed
// a call without answering it (its connection broke: it died, or is
// dying): the caller's next call goes to the old process, whether or not
// the exit was seen yet. A call the caller ended, and a plugin without a
// process here (a plugin service), are left to the probation's other
// checks.
func (p *process) brokeOnProbation(ctx context.Context, in *instance, err error, ans *answer) {
	if err == nil || ans.answered() || ctx.Err() != nil || in.verdict() == nil || in.client.Exited() == nil {
		return
	}
	p.lock <- struct{}{}
	defer p.release()
	if p.trial != nil && p.trial.newIn == in && !p.closed {
		p.rollbackLocked(fmt.Errorf("a call on the new process ended without its answer: %w", err))
	}
}

func alive(in *instance) bool {
	select {
	case <-in.client.Exited():
		return false
	default:
		return true
	}
}

func (p *process) connList() []*Conn {
	p.connsMu.Lock()
	defer p.connsMu.Unlock()
	return slices.Collect(maps.Keys(p.conns))
}

// rekey files p under the key of its new release.
func (m *Manager) rekey(p *process, from, to found) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	oldKey, newKey := procKey{from.Origin, from.Location.String()}, procKey{to.Origin, to.Location.String()}
	if oldKey == newKey {
		return
	}
	if m.procs[oldKey] == p {
		delete(m.procs, oldKey)
	}
	m.moved = slices.DeleteFunc(m.moved, func(q *process) bool { return q == p })
	if _, taken := m.procs[newKey]; taken {
		m.moved = append(m.moved, p)
		return
	}
	m.procs[newKey] = p
}

// upgrade moves the process to the release to (see Manager.Upgrade);
// kind and name are the implementation asked for, begun when the
// upgrade (its Find) began.
func (p *process) upgrade(ctx context.Context, begun time.Time, to found, kind, name string) (res UpgradeResult, err error) {
	res = UpgradeResult{Kind: kind, Name: name, Names: keyNames(p.names()), To: foundRelease(to)}
	m := p.m
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return res, ErrClosed
	}
	m.upgrades.Add(1)
	m.mu.Unlock()
	defer m.upgrades.Done()
	// Close ends the upgrade: its start and checks too.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(m.stop, cancel)()
	select {
	case p.upgrading <- struct{}{}:
	case <-ctx.Done():
		return res, fmt.Errorf("waiting for the upgrade of plugin %s under way to end: %w", p.pathNow(), ctx.Err())
	}
	defer func() { <-p.upgrading }()
	if err := p.acquire(ctx); err != nil {
		return res, err
	}
	from, old := p.bin, p.cur
	res.From = foundRelease(from)
	if old != nil {
		res.From = old.release()
	}
	p.release()
	if !changed(from, to) {
		res.Outcome = UpgradeUnchanged
		return res, nil
	}
	ctx, end := m.span(ctx, "plugkit.upgrade", attribute.String("plugkit.kind", kind), attribute.String("plugkit.name", name),
		attribute.String("plugkit.binary", to.Location.String()), attribute.String("plugkit.upgrade.from_version", from.Description.GetPluginVersion()),
		attribute.String("plugkit.upgrade.to_version", to.Description.GetPluginVersion()))
	defer func() {
		res.Took = time.Since(begun)
		if res.Outcome == UpgradeRefused || res.Outcome == UpgradeRolledBack {
			err = res.Cause
		}
		end(err)
	}()
	report := func(typ host.EventType, pid int, cause error) {
		e := pluginEvent(typ, to.Location.String(), to.Description.GetPluginVersion(), pid, cause)
		if v := from.Description.GetPluginVersion(); v != "" {
			e.Attributes = append(e.Attributes, attribute.String("plugkit.upgrade.from_version", v))
		}
		m.report(e)
	}
	report(EventUpgradeStarted, 0, nil)
	refuse := func(cause error) (UpgradeResult, error) {
		if m.stop.Err() != nil {
			return res, ErrClosed
		}
		res.Outcome, res.Cause = UpgradeRefused, cause
		report(EventUpgradeRefused, 0, cause)
		return res, cause
	}
	what := fmt.Sprintf("plugin %s %q: the new release %s", kind, name, foundName(to))
	keeps := fmt.Sprintf("the old release %s keeps serving", foundName(from))
	if to.Err != nil {
		return refuse(fmt.Errorf("%s cannot be used: %w; %s", what, to.Err, keeps))
	}
	conns := p.connList()
	if err := coversConns(conns, to, what, keeps, from); err != nil {
		return refuse(err)
	}
	c, err := to.src.Connect(ctx, to.Entry)
	if ce, ok := changedSince(err, to.SHA256); ok {
		return refuse(fmt.Errorf("%s changed after it was described (its SHA-256 is now %s, it was described with %s), so it was not run: %w; run Refresh (or Upgrade) again once the file is complete; %s", what, ce.Got, ce.Want, err, keeps))
	}
	if err != nil {
		return refuse(fmt.Errorf("%s did not start: %w; %s", what, err, keeps))
	}
	newIn := newInstance(to, c, 0)
	hooked, err := p.prepare(ctx, newIn, conns)
	if err != nil {
		c.Close()
		return refuse(fmt.Errorf("%s %w; %s", what, err, keeps))
	}

	// The switch.
	if err := p.acquire(ctx); err != nil {
		c.Close()
		return refuse(fmt.Errorf("%s was not switched to: %w; %s", what, err, keeps))
	}
	if p.closed {
		p.release()
		c.Close()
		return res, ErrClosed
	}
	p.gen++
	newIn.gen = p.gen
	old = p.cur
	for c, gen := range hooked {
		c.mu.Lock()
		if c.gen == gen {
			c.prevGen, c.gen = c.gen, newIn.gen
		}
		c.mu.Unlock()
	}
	p.bin, p.path, p.cur = to, to.Location.String(), newIn
	p.restarts, p.gaveUp, p.lastErr, p.stale, p.started = 0, false, nil, nil, time.Now()
	if old != nil && !alive(old) {
		old.client.Close()
		old = nil
	}
	if old != nil {
		p.retired = append(p.retired, old)
	}
	policy := m.cfg.Upgrade
	probation := cmp.Or(policy.Probation, DefaultProbation)
	var t *trial
	if probation > 0 {
		t = &trial{old: old, oldBin: from, newIn: newIn, ends: time.Now().Add(probation), rolled: make(chan struct{})}
		p.trial = t
		newIn.mu.Lock()
		newIn.watch = &verdict{limit: cmp.Or(policy.Failures, DefaultProbationFailures), failing: make(chan struct{})}
		newIn.mu.Unlock()
	}
	m.rekey(p, from, to)
	p.release()
	drain := cmp.Or(policy.Drain, DefaultUpgradeDrain)
	drainBy := time.Now().Add(drain)
	cut := &upgradedError{path: from.Location.String(), from: foundName(from), to: foundName(to)}
	res.To, res.Switch = newIn.release(), time.Since(begun)
	report(EventUpgradeSwitched, c.Pid(), nil)

	rolledBack := t != nil && p.probation(t, drainBy, cut)
	select {
	case <-m.done:
		return res, ErrClosed
	default:
	}
	if rolledBack {
		// Rolled back: the new process drains and is closed.
		m.mu.Lock()
		m.rolledBack[placeKey(to)] = rollback{bad: releaseKey(to), to: from}
		m.mu.Unlock()
		if t.hung {
			newIn.client.Kill() // its calls cannot end, nor a graceful stop
		}
		p.drain(newIn, time.Now().Add(drain), &upgradedError{path: newIn.path, from: foundName(to), to: foundName(from)})
		res.Outcome, res.Cause = UpgradeRolledBack, fmt.Errorf("%s was rolled back to %s: %w", what, foundName(from), t.cause)
		report(EventUpgradeRolledBack, c.Pid(), res.Cause)
		return res, res.Cause
	}
	if old != nil {
		p.drain(old, drainBy, cut)
	}
	select {
	case <-m.done:
		return res, ErrClosed
	default:
	}
	m.mu.Lock()
	delete(m.rolledBack, placeKey(to))
	m.mu.Unlock()
	res.Outcome = UpgradeCompleted
	report(EventUpgradeCompleted, c.Pid(), nil)
	return res, nil
}

// coversConns checks that the release to serves every (kind, name) at
// the major (and minor, and capabilities) the Conns were dispensed with.
func coversConns(conns []*Conn, to found, what, keeps string, from found) error {
	seen := map[string]bool{}
	for _, c := range conns {
		if c.major == nil {
			continue
		}
		key := fmt.Sprintf("%s/%s/%d.%d", c.kind, c.name, c.major.GetMajor(), c.major.GetMinor())
		if seen[key] {
			continue
		}
		seen[key] = true
		var served []string
		ok := false
		for _, k := range mergeKinds(to.Description.GetKinds()) {
			if k.GetName() != c.kind {
				continue
			}
			for _, maj := range k.GetMajors() {
				if !slices.Contains(maj.GetNames(), c.name) {
					continue
				}
				served = append(served, fmt.Sprintf("%d.%d", maj.GetMajor(), maj.GetMinor()))
				if maj.GetMajor() == c.major.GetMajor() && maj.GetMinor() >= c.major.GetMinor() && hasAll(maj.GetCapabilities(), c.major.GetCapabilities()) {
					ok = true
				}
			}
		}
		if ok {
			continue
		}
		has := "does not serve " + c.kind + " " + strconvQuote(c.name)
		if len(served) > 0 {
			has = fmt.Sprintf("serves %s %s for %q", c.kind, strings.Join(served, ", "), c.name)
		}
		want := fmt.Sprintf("%d.%d", c.major.GetMajor(), c.major.GetMinor())
		if caps := c.major.GetCapabilities(); len(caps) > 0 {
			want += " with " + strings.Join(caps, ", ")
		}
		return fmt.Errorf("%s %s, but this host has Conns on major %d (%s %s) from the old release %s, and a Conn keeps its major: install a release that serves %s %s or later, or close those Conns and Dispense again (your Majors adapters then apply); %s",
			what, has, c.major.GetMajor(), c.kind, want, foundName(from), c.kind, want, keeps)
	}
	return nil
}

func hasAll(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

func strconvQuote(s string) string { return fmt.Sprintf("%q", s) }

// probationHealthFailures is how many health checks in a row a new
// process on probation must fail to be rolled back.
const probationHealthFailures = 2

// probeMethod is a method no service has: a server that has the service
// answers it "unknown method", one that has not "unknown service".
const probeMethod = "plugkit.UpgradeProbe"

// prepare checks the new instance before any call moves to it (its
// health; every service the Conns use, which its Describe answer claims)
// and runs each Conn's restart hooks on it. It returns the Conns whose
// hooks ran, with the generation they had.
func (p *process) prepare(ctx context.Context, in *instance, conns []*Conn) (map[*Conn]int, error) {
	hctx, cancel := context.WithTimeout(ctx, cmp.Or(p.m.cfg.Restart.HungCheck, DefaultHungCheck)+5*time.Second)
	err := in.client.Ping(hctx)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("failed its health check: %w", err)
	}
	probed := map[string]bool{}
	for _, c := range conns {
		if c.major == nil || probed[c.major.GetService()] {
			continue
		}
		svc := c.major.GetService()
		probed[svc] = true
		err := in.client.Conn().Invoke(metadata.AppendToOutgoingContext(ctx, wire.NameKey, c.name), "/"+svc+"/"+probeMethod, &emptypb.Empty{}, &emptypb.Empty{})
		if status.Code(err) == codes.Unimplemented && strings.HasPrefix(status.Convert(err).Message(), "unknown service") {
			return nil, fmt.Errorf("says in its Describe answer that it serves %s %q at major %d.%d (service %s), but it does not serve %s: its Describe answer is wrong, fix or replace the release;",
				c.kind, c.name, c.major.GetMajor(), c.major.GetMinor(), svc, svc)
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("was not checked: %w;", ctx.Err())
		}
	}
	hooked := map[*Conn]int{}
	for _, c := range conns {
		c.mu.Lock()
		if c.gen != 0 {
			if err := c.runHooks(ctx, in); err != nil {
				c.mu.Unlock()
				return nil, fmt.Errorf("failed the re-initialisation of %s %q (Conn.OnRestart): %w;", c.kind, c.name, err)
			}
			hooked[c] = c.gen
		}
		c.mu.Unlock()
	}
	return hooked, nil
}

// probation watches the new release of t until its probation ends and
// the old process drained, and reports whether it was rolled back: the
// new process crashed, failed its health check, or answered only
// errors. Meanwhile the old process drains (its calls still in flight at
// the drain deadline end) and is kept to roll back to.
func (p *process) probation(t *trial, drainBy time.Time, cut error) (rolledBack bool) {
	m := p.m
	newIn := t.newIn
	ends := time.NewTimer(time.Until(t.ends))
	defer ends.Stop()
	every := min(max(time.Until(t.ends)/5, 100*time.Millisecond), time.Second)
	tick := time.NewTicker(every)
	defer tick.Stop()
	rollback := func(cause func() error) {
		p.lock <- struct{}{}
		if p.trial == t && !p.closed {
			p.rollbackLocked(cause())
		}
		p.release()
	}
	var oldIdle <-chan struct{}
	var drained <-chan time.Time
	if t.old != nil {
		oldIdle = t.old.retire()
		d := time.NewTimer(time.Until(drainBy))
		defer d.Stop()
		drained = d.C
	}
	unhealthy := 0
	var failing <-chan struct{}
	if v := newIn.verdict(); v != nil {
		failing = v.failing
	}
	for {
		select {
		case <-t.rolled:
			return true
		case <-m.done:
			return false
		case <-oldIdle:
			oldIdle, drained = nil, nil
		case <-drained:
			// Past the drain deadline: the old process's calls end; it
			// is kept to roll back to.
			p.lock <- struct{}{}
			if p.trial == t {
				t.old.cutCalls(cut)
			}
			p.release()
			oldIdle, drained = nil, nil
		case <-newIn.client.Exited():
			rollback(func() error { return crashed(newIn, newIn.client.Close()) })
		case <-failing:
			v := newIn.verdict()
			rollback(func() error {
				v.mu.Lock()
				defer v.mu.Unlock()
				return fmt.Errorf("%d calls failed on the new process and none succeeded; the last: %w", v.bad, v.lastErr)
			})
		case <-tick.C:
			ctx, cancel := context.WithTimeout(context.Background(), cmp.Or(m.cfg.Restart.HungCheck, DefaultHungCheck))
			_, err := healthpb.NewHealthClient(newIn.client.Conn()).Check(ctx, &healthpb.HealthCheckRequest{Service: wire.HealthService})
			cancel()
			if err == nil || !alive(newIn) {
				unhealthy = 0
				continue
			}
			// Two in a row: one slow answer on a loaded machine is no
			// failure.
			if unhealthy++; unhealthy >= probationHealthFailures {
				rollback(func() error {
					t.hung = true
					return fmt.Errorf("the new process failed %d health checks in a row (each bounded by Config.Restart.HungCheck): %w", unhealthy, err)
				})
			}
		case <-ends.C:
			p.lock <- struct{}{}
			if p.trial == t {
				p.trial = nil
				newIn.mu.Lock()
				newIn.watch = nil
				newIn.mu.Unlock()
			}
			p.release()
			select {
			case <-t.rolled:
				return true
			default:
				return false
			}
		}
	}
}

// drain waits for the calls in flight on in, a retired instance, to end
// by the drain deadline, ends those still running then with cause, and
// closes it.
func (p *process) drain(in *instance, by time.Time, cause error) {
	idle := in.retire()
	t := time.NewTimer(time.Until(by))
	defer t.Stop()
	select {
	case <-idle:
	case <-t.C:
		in.cutCalls(cause)
	case <-p.m.done:
	}
	p.lock <- struct{}{}
	p.retired = slices.DeleteFunc(p.retired, func(r *instance) bool { return r == in })
	p.release()
	in.client.Close()
}
