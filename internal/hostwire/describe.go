package hostwire

// DescribeStart is host's start of a plugin that is asked, with
// handshake.EnvDescribe, for its description only, for package describe,
// which owns the catalog's Describe protocol on the host side. Its value
// is a
//
//	func(ctx context.Context, cmd host.Command, opts host.Options) (payload []byte, c *host.Client, err error)
//
// set by host's init and typed any because this package cannot import
// host. It launches cmd as host.Start does; a plugin that writes a
// describe line and exits 0 gives its payload and a nil Client, any other
// is connected to as host.Start connects and gives its Client and no
// payload.
var DescribeStart any
