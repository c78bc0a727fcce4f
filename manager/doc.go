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
