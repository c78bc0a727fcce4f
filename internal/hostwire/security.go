package hostwire

// OwnTLS is func(host.Security) bool, set by package host: whether a
// Security is host.TLS(cfg), the host's own TLS for a plugin that serves
// its own (plugin.Config.TLSProvider). plugintest asks it to refuse the
// settings that cannot reach such a plugin, and to give AutoMTLS to the
// others; it is typed any because this package cannot import host.
var OwnTLS any
