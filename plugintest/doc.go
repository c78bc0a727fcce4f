// Package plugintest tests a plugin without building it: it serves the
// plugin's plugin.Config, or its catalog, inside the test process, over a
// real private unix socket with AutoMTLS and the whole go-plugin protocol
// (handshake line, health, broker, stdio, controller), and hands back a
// connected *host.Client, or a *manager.Manager from which a kind's typed
// client is dispensed exactly as a host would (manager.Dispense,
// objectstore.Open, ...). Everything is stopped by t.Cleanup. Run
// serves the same way for code without a testing.TB (an example, a
// TestMain) and hands back a stop function instead.
//
// It is plugkit's answer to go-plugin's TestPluginGRPCConn, with the
// difference that nothing is short-circuited: the plugin negotiates,
// listens and serves through plugin.Run, and the host connects through
// host.Connect, so a test sees what a real host sees, minus the exec.
package plugintest
