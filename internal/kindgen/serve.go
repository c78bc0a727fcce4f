package kindgen

import (
	"fmt"

	"google.golang.org/protobuf/compiler/protogen"
)

// genServePrevious writes V<prev>: the previous major's Funcs, filled in
// for the unary and server-streaming RPCs unchanged since it with a server
// of this major, so that a plugin serves both majors from one
// implementation and writes only the RPCs that changed.
func genServePrevious(g *protogen.GeneratedFile, m, p *major) {
	h := &hostFile{g: g, m: m, prev: p}
	_, prevPlugin := pluginPackage(p)
	var filled, left []*protogen.Method
	for _, old := range p.svc.Methods {
		meth := findMethod(m.svc, old)
		if meth == nil {
			left = append(left, old)
			continue
		}
		if c, _ := h.change(meth); c == unchanged && !old.Desc.IsStreamingClient() {
			filled = append(filled, old)
		} else {
			left = append(left, old)
		}
	}
	if len(filled) == 0 {
		return
	}
	funcs := g.QualifiedGoIdent(prevPlugin.Ident("Funcs"))
	server := g.QualifiedGoIdent(m.file.GoImportPath.Ident(m.svc.GoName + "Server"))
	name := fmt.Sprintf("V%d", p.num)
	g.P()
	g.P("// ", name, " returns the ", m.kind, " v", p.num, " functions that serve, with server, the")
	g.P("// RPCs unchanged since v", p.num, " (", list(goNames(filled)), "). Set the others (", list(goNames(left)), ")")
	g.P("// before calling Server: catalog.New refuses a nil one, naming it.")
	g.P("func ", name, "(server ", server, ") ", funcs, " {")
	g.P("return ", funcs, "{")
	for _, old := range filled {
		servePrevious(g, m, old, findMethod(m.svc, old))
	}
	g.P("}")
	g.P("}")
	g.P()
	g.P("// convert copies from into to, messages of two majors with the same wire form.")
	g.P("func convert(from, to ", protoPkg.Ident("Message"), ") error {")
	g.P("b, err := ", protoPkg.Ident("Marshal"), "(from)")
	g.P("if err != nil {")
	g.P("return err")
	g.P("}")
	g.P("return ", protoPkg.Ident("Unmarshal"), "(b, to)")
	g.P("}")
	if !anyStreaming(filled) {
		return
	}
	g.P()
	g.P("// sendAs sends messages of type T on a stream of another major whose")
	g.P("// messages have the same wire form.")
	g.P("type sendAs[T any] struct{ ", grpcPkg.Ident("ServerStream"), " }")
	g.P()
	g.P("// Send sends m.")
	g.P("func (s sendAs[T]) Send(m *T) error { return s.ServerStream.SendMsg(m) }")
}

// servePrevious writes one field of V<prev>: old served by meth.
func servePrevious(g *protogen.GeneratedFile, m *major, old, meth *protogen.Method) {
	typed, _, results := serverParams(g, old)
	in := g.QualifiedGoIdent(meth.Input.GoIdent)
	if !old.Desc.IsStreamingServer() {
		g.P(old.GoName, ": func(", typed, ") ", results, " {")
		g.P("in := new(", in, ")")
		g.P("if err := convert(req, in); err != nil {")
		g.P("return nil, err")
		g.P("}")
		g.P("out, err := server.", meth.GoName, "(ctx, in)")
		g.P("if err != nil {")
		g.P("return nil, err")
		g.P("}")
		g.P("resp := new(", old.Output.GoIdent, ")")
		g.P("return resp, convert(out, resp)")
		g.P("},")
		return
	}
	oldIn := g.QualifiedGoIdent(old.Input.GoIdent)
	oldOut := g.QualifiedGoIdent(old.Output.GoIdent)
	g.P(old.GoName, ": func(req *", oldIn, ", stream ", grpcPkg.Ident("ServerStreamingServer"), "[", oldOut, "]) error {")
	g.P("in := new(", in, ")")
	g.P("if err := convert(req, in); err != nil {")
	g.P("return err")
	g.P("}")
	g.P("return server.", meth.GoName, "(in, sendAs[", meth.Output.GoIdent, "]{stream})")
	g.P("},")
}

// findMethod returns the method of svc named as old, or nil.
func findMethod(svc *protogen.Service, old *protogen.Method) *protogen.Method {
	for _, m := range svc.Methods {
		if m.Desc.Name() == old.Desc.Name() {
			return m
		}
	}
	return nil
}

// goNames returns the Go names of methods.
func goNames(methods []*protogen.Method) []string {
	var out []string
	for _, m := range methods {
		out = append(out, m.GoName)
	}
	return out
}

// anyStreaming reports whether a method streams.
func anyStreaming(methods []*protogen.Method) bool {
	for _, m := range methods {
		if m.Desc.IsStreamingServer() || m.Desc.IsStreamingClient() {
			return true
		}
	}
	return false
}
