package protocheck

import (
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
)

func methodOpts(md protoreflect.MethodDescriptor) *descriptorpb.MethodOptions {
	o, _ := md.Options().(*descriptorpb.MethodOptions)
	if o == nil {
		o = &descriptorpb.MethodOptions{}
	}
	return o
}

// checkServices runs the rules on services paired by full name and their
// methods paired by name.
func (c *checker) checkServices() {
	for _, name := range c.old.serviceOrder {
		os := c.old.services[name].d
		ne, ok := c.new.services[name]
		if !ok {
			continue
		}
		ns := ne.d
		for i := 0; i < os.Methods().Len(); i++ {
			om := os.Methods().Get(i)
			nm := ns.Methods().ByName(om.Name())
			if nm == nil {
				c.add("RPC_NO_DELETE", at(ns), "", "Previously present RPC %q on service %q was deleted.", string(om.Name()), c.serviceName(ns))
				continue
			}
			svc := c.serviceName(ns)
			if om.IsStreamingClient() != nm.IsStreamingClient() {
				from, to := "streaming", "unary"
				if nm.IsStreamingClient() {
					from, to = to, from
				}
				c.add("RPC_SAME_CLIENT_STREAMING", at(nm), "", "RPC %q on service %q changed from client %s to client %s.", string(nm.Name()), svc, from, to)
			}
			if om.IsStreamingServer() != nm.IsStreamingServer() {
				from, to := "streaming", "unary"
				if nm.IsStreamingServer() {
					from, to = to, from
				}
				c.add("RPC_SAME_SERVER_STREAMING", at(nm), "", "RPC %q on service %q changed from server %s to server %s.", string(nm.Name()), svc, from, to)
			}
			if a, b := methodOpts(om).GetIdempotencyLevel(), methodOpts(nm).GetIdempotencyLevel(); a != b {
				c.add("RPC_SAME_IDEMPOTENCY_LEVEL", at(nm, []int32{4, 34}), "", "RPC %q on service %q changed option \"idempotency_level\" from %q to %q.", string(nm.Name()), svc, a.String(), b.String())
			}
			if a, b := om.Input().FullName(), nm.Input().FullName(); a != b {
				c.add("RPC_SAME_REQUEST_TYPE", at(nm, []int32{2}), "", "RPC %q on service %q changed request type from %q to %q.", string(nm.Name()), svc, string(a), string(b))
			}
			if a, b := om.Output().FullName(), nm.Output().FullName(); a != b {
				c.add("RPC_SAME_RESPONSE_TYPE", at(nm, []int32{3}), "", "RPC %q on service %q changed response type from %q to %q.", string(nm.Name()), svc, string(a), string(b))
			}
		}
	}
}
