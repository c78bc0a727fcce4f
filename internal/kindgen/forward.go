package kindgen

import (
	"fmt"
	"strconv"

	"google.golang.org/protobuf/compiler/protogen"

	"github.com/plugkit/plugkit/protocheck"
)

// interchangeable reports whether two majors' messages are the same on the
// wire and in JSON, as protocheck compares them.
func interchangeable(a, b *protogen.Message) bool {
	return protocheck.Interchangeable(a.Desc, b.Desc)
}

// forwardMethod writes the forwarding of an RPC unchanged since the
// previous major: the previous major's method, with this major's types.
func (h *hostFile) forwardMethod(recv string, meth, old *protogen.Method) {
	g, p := h.g, h.prev
	params, results := signature(g, meth)
	full := g.QualifiedGoIdent(p.file.GoImportPath.Ident(p.svc.GoName + "_" + old.GoName + "_FullMethodName"))
	g.P("// ", meth.GoName, " forwards to ", p.svc.Desc.FullName(), "/", old.Desc.Name(), ", whose request and response")
	g.P("// are unchanged since v", p.num, ".")
	g.P("func (f ", recv, ") ", meth.GoName, "(", params, ") ", results, " {")
	h.requireOld(old)
	if !meth.Desc.IsStreamingClient() && !meth.Desc.IsStreamingServer() {
		g.P("out := new(", meth.Output.GoIdent, ")")
		g.P("if err := f.conn.Invoke(ctx, ", full, ", in, out, opts...); err != nil {")
		g.P("return nil, err")
		g.P("}")
		g.P("return out, nil")
		g.P("}")
		g.P()
		return
	}
	desc := g.QualifiedGoIdent(p.file.GoImportPath.Ident(p.svc.GoName + "_ServiceDesc"))
	g.P("stream, err := f.conn.NewStream(ctx, &", desc, ".Streams[", streamIndex(p.svc, old), "], ", full, ", opts...)")
	g.P("if err != nil {")
	g.P("return nil, err")
	g.P("}")
	g.P("x := &", grpcPkg.Ident("GenericClientStream"), "[", meth.Input.GoIdent, ", ", meth.Output.GoIdent, "]{ClientStream: stream}")
	if !meth.Desc.IsStreamingClient() {
		g.P("if err := x.ClientStream.SendMsg(in); err != nil {")
		g.P("return nil, err")
		g.P("}")
		g.P("if err := x.ClientStream.CloseSend(); err != nil {")
		g.P("return nil, err")
		g.P("}")
	}
	g.P("return x, nil")
	g.P("}")
	g.P()
}

// streamIndex is meth's index in its service's ServiceDesc.Streams, as
// protoc-gen-go-grpc numbers them.
func streamIndex(svc *protogen.Service, meth *protogen.Method) int {
	i := 0
	for _, m := range svc.Methods {
		if m == meth {
			return i
		}
		if m.Desc.IsStreamingClient() || m.Desc.IsStreamingServer() {
			i++
		}
	}
	return i
}

// refuseMethod writes the refusal of an RPC that the previous major lacks.
func (h *hostFile) refuseMethod(recv string, meth *protogen.Method) {
	g, m, p := h.g, h.m, h.prev
	params, results := signature(g, meth)
	msg := strconv.Quote(string(meth.Desc.Name()) + " arrived in " + m.version(m.since[meth.Desc.Name()]) + "; use a release of the plugin that speaks " + m.kind + " v" + strconv.Itoa(m.num))
	g.P("// ", meth.GoName, " answers codes.Unimplemented: ", m.kind, " v", p.num, " has no ", meth.Desc.Name(), ".")
	g.P("func (f ", recv, ") ", meth.GoName, "(", params, ") ", results, " {")
	g.P("return nil, f.Unimplemented(", msg, ")")
	g.P("}")
	g.P()
}

// halfForward writes <Method>V<prev> for an RPC whose request changed but
// whose response did not: it calls the previous major's RPC with a request
// of the previous major and returns this major's response, so that the
// adapter only converts the request.
func (h *hostFile) halfForward(recv string, meth, old *protogen.Method) {
	g, p := h.g, h.prev
	in := g.QualifiedGoIdent(old.Input.GoIdent)
	out := g.QualifiedGoIdent(meth.Output.GoIdent)
	params := "ctx " + g.QualifiedGoIdent(contextPkg.Ident("Context")) + ", in *" + in + ", opts ..." + g.QualifiedGoIdent(grpcPkg.Ident("CallOption"))
	full := g.QualifiedGoIdent(p.file.GoImportPath.Ident(p.svc.GoName + "_" + old.GoName + "_FullMethodName"))
	name := fmt.Sprintf("%sV%d", meth.GoName, p.num)
	g.P("// ", name, " calls ", p.svc.Desc.FullName(), "/", old.Desc.Name(), " with a v", p.num, " request and returns its")
	g.P("// response as v", h.m.num, "'s, which is unchanged: the adapter's ", meth.GoName, " converts the request")
	g.P("// and calls it.")
	if !meth.Desc.IsStreamingServer() {
		g.P("func (f ", recv, ") ", name, "(", params, ") (*", out, ", error) {")
		h.requireOld(old)
		g.P("out := new(", out, ")")
		g.P("if err := f.conn.Invoke(ctx, ", full, ", in, out, opts...); err != nil {")
		g.P("return nil, err")
		g.P("}")
		g.P("return out, nil")
		g.P("}")
		g.P()
		return
	}
	desc := g.QualifiedGoIdent(p.file.GoImportPath.Ident(p.svc.GoName + "_ServiceDesc"))
	g.P("func (f ", recv, ") ", name, "(", params, ") (", grpcPkg.Ident("ServerStreamingClient"), "[", out, "], error) {")
	h.requireOld(old)
	g.P("stream, err := f.conn.NewStream(ctx, &", desc, ".Streams[", streamIndex(p.svc, old), "], ", full, ", opts...)")
	g.P("if err != nil {")
	g.P("return nil, err")
	g.P("}")
	g.P("x := &", grpcPkg.Ident("GenericClientStream"), "[", in, ", ", out, "]{ClientStream: stream}")
	g.P("if err := x.ClientStream.SendMsg(in); err != nil {")
	g.P("return nil, err")
	g.P("}")
	g.P("if err := x.ClientStream.CloseSend(); err != nil {")
	g.P("return nil, err")
	g.P("}")
	g.P("return x, nil")
	g.P("}")
	g.P()
}

// requireOld writes the previous major's minor check of old.
func (h *hostFile) requireOld(old *protogen.Method) {
	p := h.prev
	if minor := p.since[old.Desc.Name()]; minor > 0 {
		h.g.P("if err := f.V", p.num, ".Require(", minor, ", ", strconv.Quote(string(old.Desc.Name())), "); err != nil {")
		h.g.P("return nil, err")
		h.g.P("}")
	}
}
