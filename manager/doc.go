// Package manager is the host side of plugin kinds: it finds plugins in
// its sources (binaries in directories, plugin services, plugins attached
// in-process; see Source), asks each what it implements (once: answers are
// cached by path, size, mtime and SHA-256), keeps a registry of
// (kind, name) to binary, runs one shared process per binary, started on
// first use and restarted after a crash, and hands out typed clients of
// the latest major version of a kind, through an adapter when a plugin
// only has an older one.
//
// It has two sides: a Finder finds plugins (it launches, hashes, pins,
// describes and caches them: its Dirs, Files, Remotes and RemotesFile are
// the built-in Sources, and a Source of your own uses it too), and a
// Manager runs what its Sources found (the registry, the processes, the
// restarts, Dispense).
//
//	finder := &manager.Finder{Launch: host.Command{Cookie: cookie}, CacheFile: "plugins.cache.json"}
//	m := manager.New(manager.Config{Sources: []manager.Source{finder.Dirs("./plugins")}})
//	if err := m.Discover(ctx); err != nil { ... }
//	defer m.Close()
//	store, err := manager.Dispense(ctx, m, "objectstore", "example.com/fs", manager.Majors[Store]{
//		2: newV2Store,
//		1: adaptV1, // an adapter: v1 client -> the v2 interface
//	})
//
// What runs: a Finder runs a file to ask what it implements, so a file
// it runs must be a plugin. Finder.Names (a pattern such as "plugkit-*")
// keeps Dirs from running anything else in a directory, save Go
// programs that link plugkit (their build info says so without running
// them). The build info, rather than a marker of plugkit's own, because
// every Go plugin built with plugkit already carries it (nothing to add
// to a build) and reading it runs nothing; Python and Node plugins are
// recognised by their name. It identifies, it does not authenticate: a
// file that claims it is run, so the checks below and Pins still apply.
// A plugin file that is set-user-ID or set-group-ID, group- or
// world-writable, owned by another user than the host's or root, or in a
// directory others may write without the sticky bit is refused before it
// runs, as ssh and sudo refuse such files; its Entry's Err says why and
// what to do (Windows files have no such owner and mode, and are not
// checked).
//
// Restarts: a process that exits unexpectedly is restarted on the next
// call, and every live client's re-init hooks (Conn.OnRestart) run first,
// so an object store's Init configuration is replayed. A call that was in
// flight when the process died fails; it is never retried behind the
// caller's back. Restarts back off (Config.Restart.Backoff, doubling) and
// give up after Config.Restart.Max in a row with an error saying so. A
// process that stops answering is found by a health check with a deadline
// after a call times out, killed, and restarted on the next call. A
// client closed by the host is never restarted. A plugin a sandbox killed
// for passing its memory limit (sandbox.Limits) is restarted like any
// other that exits. The error of a call during which the plugin died
// wraps how it ended (a *host.ExitError, and its Cause: errors.As
// finds a *sandbox.MemoryLimitError there), and the restart logs it.
//
// Upgrades: Manager.Upgrade and Manager.Refresh move a running plugin to
// a new release (a binary replaced on disk, a new path, a plugin
// service's new endpoints, a new WebAssembly module, described, and so
// compiled, by the sources' Find) without a failed call. The new release
// is checked before any call moves: its pin, its Describe answer, every
// major (and minor, and capability) its Conns were dispensed with, and a
// probe of each service it claims; it is started, every Conn's OnRestart
// hooks run on it and it passes a health check. Then new calls and
// streams go to it while the old process finishes its calls in flight
// (Config.Upgrade.Drain; those still running then end with
// codes.Unavailable saying the plugin was upgraded), and is kept to roll
// back to until the probation ends (Config.Upgrade.Probation): a new
// process that dies, fails a health check or answers only errors is
// rolled back, and Refresh does not try that release again until it
// changes. The calls in flight on a release when it dies fail, as they
// do on a crash. A process upgrades as a whole: every (kind, name) it
// serves moves with it. So Init must be idempotent (it runs again on the
// new process, and on the old after a rollback) and state that must
// outlive a process must live outside it. Status says which release
// serves and which drain.
//
// Deadlines: a call or stream whose context carries no deadline gets the
// manager's (Config.Calls: DefaultCallDeadline unless set, per kind if
// need be), so that a hung plugin cannot hold its caller forever; the
// error then names that deadline.
//
// Observability: the manager reports through Config.Telemetry, a Finder
// through Finder.Host.Telemetry (see host.Telemetry): spans of Discover,
// Describe, Dispense and restarts
// besides those of every call; the events and metrics of restarts, hung
// plugins, giving up and pin refusals besides every process's own. See
// docs/observability.md.
package manager
