// Package tracewire holds what host and plugin agree on about trace context
// on the wire: the propagator and the otelgrpc filter that leaves go-plugin's
// plumbing untraced, so that the two sides trace the same calls. It links
// no exporter, so the host side can import it.
package tracewire
