// Package describe is the host side of the catalog's Describe protocol:
// how a host learns which kinds, majors and names a plugkit catalog
// plugin (package catalog) serves. The manager's Discover, its sources,
// release's Install and Push, and the plugkit command all describe
// plugins through it.
//
// A plugin is described in one of two ways:
//
//   - the describe line: Start launches the plugin as host.Start does,
//     with handshake.EnvDescribe set. A plugkit catalog plugin writes its
//     description on one line of its standard output and exits 0, with no
//     key pair, listener or gRPC; Start decodes and checks it.
//   - the Describe call: a plugin that ignores the request (a go-plugin
//     plugin serving plugkit.catalog.v1.Catalog, or a catalog whose
//     description is longer than handshake.MaxDescribeLine) answers with
//     its handshake line and is connected to; Conn asks it over gRPC.
//
// Run does both and stops the plugin; Check is the check every answer
// passes, however it came, before a host believes it. The wire format of
// the describe line is package handshake's, which the plugin side shares.
package describe
