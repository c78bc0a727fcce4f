// Package hostwire is the wiring between package host and the packages
// built on it (manager, describe, plugintest, wasmhost), kept out of host's API: what they
// share with host but a host author does not call. It imports nothing
// of plugkit's, so that host can import it.
package hostwire
