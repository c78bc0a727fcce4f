package echo

import "github.com/plugkit/plugkit/handshake"

// Cookie is the magic cookie of the benchmark plugins (plugkit and
// go-plugin alike).
var Cookie = handshake.Cookie{Key: "PLUGKIT_BENCH_PLUGIN", Value: "echo"}

// PluginName is the name under which the go-plugin plugin serves the
// echo service.
const PluginName = "echo"
