// Package netnstest makes, for a test or a benchmark, two network
// namespaces of its own joined by a veth pair with addresses of its own
// (10.213.0.1/30 on the plugins' side, 10.213.0.2/30 on the host's), runs
// processes in the plugins' namespace and dials from the host's. All
// traffic stays inside the namespaces; they are deleted at cleanup. It
// needs root and iproute2, and fails (never skips) without them.
package netnstest
