// Package release publishes, signs, resolves, installs and locks plugin
// releases through an OCI registry, or an OCI image-layout directory that
// mirrors one, so that a host installs its own plugins the way
// `terraform init` does. The plugkit command's release push, install and
// lock are thin layers over it.
//
// A release is one OCI image index tagged with its version (Push): a
// manifest per platform (os/arch) whose one layer is the plugin binary,
// and, as an annotation of the index, the binary's Describe answer (kinds,
// majors, minors, capabilities, names, plugin version) so that Resolve
// chooses among releases without downloading a binary. Sign stores a
// cosign-compatible signature of the index's digest (ECDSA P-256 over
// cosign's simple-signing payload, under the tag sha256-HEX.sig); Install
// refuses a release that is unsigned, signed by a key it does not trust,
// or whose content differs from what was signed, checks that the
// downloaded binary's own Describe agrees with the metadata it was chosen
// by, and only then installs it atomically (temporary file, fsync,
// rename). Nothing of a binary is read before the signature verifies, a
// signed release served under another version's tag is refused, and what
// a registry may send while releases are listed is bounded (Options:
// tags, pages, index bytes, time; ErrLimit). A Lock records every
// platform's digest, and Lock.Pins turns it into manager.Config.Pins.
//
// A release may also carry one WebAssembly (wasip1) module for every
// platform, under the platform PlatformWasm with a MediaTypeWasm layer.
// Install falls back to it on a machine the release has no native binary
// for (or prefers it, as Target.Wasm says), checks it by running it in
// the runtime for modules its caller gives (Target.Guests, such as a
// wasmhost.Runtime), and installs it as NAME.wasm, which a manager with
// a runtime for modules runs.
//
// See docs/distribution.md for the workflow: publishing from CI,
// installing from a host, committing the lock file, air-gapped installs.
package release
