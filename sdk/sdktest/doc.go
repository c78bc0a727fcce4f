// Package sdktest proves plugkit's SDKs for other languages with the Go
// side's own tools: the SDKs' example plugins sit in one plugin directory
// with the Go example plugins, are listed by plugkit plugins list,
// dispensed through the manager (directly and through the v1->v2 adapter),
// pass the objectstore conformance suites, and appear in the compatibility
// matrix; and where an SDK must behave as a Go plugin does (the cookie
// notice, the version error, exiting when the host dies) the test runs
// both and compares. A kind neither SDK has seen (testdata/thermostat) is
// served by plugins that import the SDKs installed with pip and npm, as a
// user installs them, and read the kind's buf image.
//
// The tests need the languages' runtimes, so they sit behind the sdk build
// tag: make test-sdk runs them (see the README for what it needs).
package sdktest
