package kindgen

import (
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
	if minor := p.since[old.Desc.Name()]; minor > 0 {
		g.P("if err := f.V", p.num, ".Require(", minor, ", ", strconv.Quote(string(old.Desc.Name())), "); err != nil {")
		g.P("return nil, err")
		g.P("}")
	}
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
	msg := strconv.Quote(string(meth.Desc.Name()) + " arrived in " + m.version(m.since[meth.Desc.Name()]) + ", and plugin %s speaks " + p.kind + " v" + strconv.Itoa(p.num) + ", which lacks it: use a release of it that speaks " + m.kind + " v" + strconv.Itoa(m.num))
	g.P("// ", meth.GoName, " answers codes.Unimplemented: ", m.kind, " v", p.num, " has no ", meth.Desc.Name(), ".")
	g.P("func (f ", recv, ") ", meth.GoName, "(", params, ") ", results, " {")
	g.P("return nil, ", statusPkg.Ident("Errorf"), "(", codesPkg.Ident("Unimplemented"), ", ", msg, ", f.V", p.num, ".Info().Name)")
	g.P("}")
	g.P()
}
