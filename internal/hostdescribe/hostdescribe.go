package hostdescribe

// Start is host's start of a plugin that is asked, with
// handshake.EnvDescribe, for its description only. Its value is a
//
//	func(ctx context.Context, cmd host.Command, opts host.Options) (payload []byte, c *host.Client, err error)
//
// typed any because this package cannot import host, which imports it.
// It launches cmd as host.Start does; a plugin that writes a describe
// line and exits 0 gives its payload and a nil Client, any other is
// connected to as host.Start connects and gives its Client and no
// payload.
var Start any
