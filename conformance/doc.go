// Package conformance checks that plugins behave as their kind's major
// promises, and which host major works with which plugin release.
//
// A kind's author writes a Suite once per major: Go functions (Cases) over
// the host's typed client T, such as an object store's Store. The same
// suite runs in three places:
//
//   - in a plugin author's own go test, through the in-process harness
//     (package plugintest) and Suite.Test;
//   - against a built binary: dispense T from a manager.Manager over its
//     directory, then Suite.Test or Suite.Run;
//   - inside the compatibility Matrix, which runs every plugin binary in a
//     directory against every host major the kind ships (HostMajor), with
//     the host's adapters, and says per cell whether the plugin works
//     directly, through an adapter, is incompatible (with the release
//     resolver's advice) or fails (with the failing cases and their
//     errors).
package conformance
