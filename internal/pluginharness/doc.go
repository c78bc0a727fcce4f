// Package pluginharness runs a plugin inside another program, such as a
// test: it replaces the process's environment, standard output and parent
// watch for one plugin.Run. plugintest and plugkit's own tests use it; a
// real plugin never needs it, so plugin.Config does not show it.
//
// The harness travels in Run's context rather than in a hook that package
// plugin sets: Run already takes a context, a harness belongs to one call
// (a test may run several plugins at once), and a context key of an
// internal package cannot be made outside plugkit.
package pluginharness
