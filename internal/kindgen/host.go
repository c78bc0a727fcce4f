package kindgen

import (
	"fmt"
	"strconv"

	"google.golang.org/protobuf/compiler/protogen"
)

// hostFile is one major's host-side file being written.
type hostFile struct {
	g    *protogen.GeneratedFile
	k    *kind
	m    *major
	prev *major // the previous major, or nil
}

// genHost writes m's host side into its Go package: constants, Client,
// Majors and Open, and the forwarding from the previous major.
func genHost(gen *protogen.Plugin, k *kind, m *major) {
	h := &hostFile{g: gen.NewGeneratedFile(fileName(m, ""), m.file.GoImportPath), k: k, m: m, prev: k.previous(m)}
	header(h.g, m.file)
	h.g.P("package ", m.file.GoPackageName)
	h.g.P()
	h.constants()
	h.client()
	for _, meth := range m.svc.Methods {
		h.clientMethod(meth)
	}
	h.open()
	if h.prev != nil {
		h.forward()
	}
}

func (h *hostFile) constants() {
	g, m := h.g, h.m
	g.P("// Kind is the plugin kind whose major ", m.num, " this package is.")
	g.P("const Kind = ", strconv.Quote(m.kind))
	g.P()
	g.P("// Major is this package's major version of ", m.kind, ".")
	g.P("const Major = ", m.num)
	g.P()
	g.P("// Minor is the newest minor of ", m.kind, " v", m.num, " in the protocol files this package")
	g.P("// was generated from: a plugin registered through package ", m.file.GoPackageName, "plugin")
	g.P("// announces it.")
	g.P("const Minor = ", len(m.caps))
	g.P()
	if c := h.k.cookie; c != nil {
		g.P("// Cookie is the magic cookie of ", m.kind, " plugins: hosts and plugins of every")
		g.P("// major of ", m.kind, " agree on it, so that a binary of another kind is refused at once.")
		g.P("var Cookie = ", handshakePkg.Ident("Cookie"), "{Key: ", strconv.Quote(c.words[1]), ", Value: ", strconv.Quote(c.words[2]), "}")
		g.P()
	}
	for i, c := range m.caps {
		g.P("// ", capIdent(c), " is the capability that announces ", m.version(i+1), ".")
		g.P("const ", capIdent(c), " = ", strconv.Quote(c))
		g.P()
	}
	g.P("// Capabilities returns the capabilities of the minors of ", m.kind, " v", m.num, " up to")
	g.P("// Minor, oldest first.")
	g.P("func Capabilities() []string {")
	list := ""
	for i, c := range m.caps {
		if i > 0 {
			list += ", "
		}
		list += capIdent(c)
	}
	if list == "" {
		g.P("return nil")
	} else {
		g.P("return []string{", list, "}")
	}
	g.P("}")
	g.P()
}

func (h *hostFile) client() {
	g, m := h.g, h.m
	api := m.svc.GoName + "Client"
	info := g.QualifiedGoIdent(managerPkg.Ident("Info"))
	g.P("// Client is the host's client of a ", m.kind, " v", m.num, " plugin, over a manager.Conn or")
	g.P("// through an adapter from an older major. Called directly, it answers an RPC")
	g.P("// that arrived in a newer minor than the plugin announced with")
	g.P("// codes.Unimplemented, without a round trip.")
	g.P("type Client struct {")
	g.P("api ", api)
	g.P("info ", info)
	g.P("}")
	g.P()
	g.P("// NewClient returns the client of the ", m.kind, " v", m.num, " plugin behind conn, which")
	g.P("// announced info: what manager.Dispense passes to a Majors function.")
	g.P("func NewClient(conn ", grpcPkg.Ident("ClientConnInterface"), ", info ", info, ") *Client {")
	g.P("return &Client{api: New", api, "(conn), info: info}")
	g.P("}")
	g.P()
	g.P("// Info says which plugin serves c, at which major and minor, and whether")
	g.P("// through an adapter.")
	g.P("func (c *Client) Info() ", info, " { return c.info }")
	g.P()
	g.P("// Require returns nil when the plugin behind c announces minor of ", m.kind, " v", m.num)
	g.P("// or a newer one, or speaks another major (its adapter answers for itself);")
	g.P("// otherwise a codes.Unimplemented error that names rpc, the minor and the plugin.")
	g.P("func (c *Client) Require(minor int, rpc string) error {")
	g.P("if c.info.Major != Major || c.info.Minor >= minor {")
	g.P("return nil")
	g.P("}")
	g.P("return ", statusPkg.Ident("Errorf"), "(", codesPkg.Ident("Unimplemented"), ", \"%s arrived in %s %d.%d, and plugin %s (release %s) announces %s %d.%d: use a release of it that has %s %d.%d\",")
	g.P("rpc, Kind, Major, minor, c.info.Name, c.info.PluginVersion, Kind, c.info.Major, c.info.Minor, Kind, Major, minor)")
	g.P("}")
	g.P()
}

// signature returns the parameters and results of meth on a client, with
// the message types of the package of the file being written.
func signature(g *protogen.GeneratedFile, meth *protogen.Method) (params, results string) {
	ctx := "ctx " + g.QualifiedGoIdent(contextPkg.Ident("Context"))
	opts := "opts ..." + g.QualifiedGoIdent(grpcPkg.Ident("CallOption"))
	in, out := g.QualifiedGoIdent(meth.Input.GoIdent), g.QualifiedGoIdent(meth.Output.GoIdent)
	cs, ss := meth.Desc.IsStreamingClient(), meth.Desc.IsStreamingServer()
	switch {
	case !cs && !ss:
		return ctx + ", in *" + in + ", " + opts, "(*" + out + ", error)"
	case !cs:
		return ctx + ", in *" + in + ", " + opts, "(" + g.QualifiedGoIdent(grpcPkg.Ident("ServerStreamingClient")) + "[" + out + "], error)"
	case !ss:
		return ctx + ", " + opts, "(" + g.QualifiedGoIdent(grpcPkg.Ident("ClientStreamingClient")) + "[" + in + ", " + out + "], error)"
	}
	return ctx + ", " + opts, "(" + g.QualifiedGoIdent(grpcPkg.Ident("BidiStreamingClient")) + "[" + in + ", " + out + "], error)"
}

// args is the argument list that passes a client method's parameters on.
func args(meth *protogen.Method) string {
	if meth.Desc.IsStreamingClient() {
		return "ctx, opts..."
	}
	return "ctx, in, opts..."
}

func (h *hostFile) clientMethod(meth *protogen.Method) {
	g, m := h.g, h.m
	params, results := signature(g, meth)
	minor := m.since[meth.Desc.Name()]
	g.P("// ", meth.GoName, " calls ", m.svc.Desc.FullName(), "/", meth.Desc.Name(), ".")
	if minor > 0 {
		g.P("// It arrived in ", m.version(minor), ": a plugin that announces an older minor")
		g.P("// gets no call, and the answer is codes.Unimplemented.")
	}
	for _, f := range meth.Input.Fields {
		if fm := m.fieldSince[f.Desc.FullName()]; fm > minor && !meth.Desc.IsStreamingClient() {
			g.P("// Its field ", f.Desc.Name(), " arrived in ", m.version(fm), ": set, it is refused the same way")
			g.P("// by a plugin that announces an older minor.")
		}
	}
	g.P("func (c *Client) ", meth.GoName, "(", params, ") ", results, " {")
	if minor > 0 {
		g.P("if err := c.Require(", minor, ", ", strconv.Quote(string(meth.Desc.Name())), "); err != nil {")
		g.P("return nil, err")
		g.P("}")
	}
	h.fieldChecks(meth, minor)
	g.P("return c.api.", meth.GoName, "(", args(meth), ")")
	g.P("}")
	g.P()
	if meth.Desc.IsStreamingServer() && !meth.Desc.IsStreamingClient() {
		h.drain(meth, params)
	}
}

// fieldChecks writes, for a request (not a stream of them), the minor
// check of each field newer than the RPC: set, it needs that minor.
func (h *hostFile) fieldChecks(meth *protogen.Method, rpcMinor int) {
	if meth.Desc.IsStreamingClient() {
		return
	}
	g := h.g
	for _, f := range meth.Input.Fields {
		minor := h.m.fieldSince[f.Desc.FullName()]
		if minor <= rpcMinor {
			continue
		}
		g.P("if in.ProtoReflect().Has(in.ProtoReflect().Descriptor().Fields().ByNumber(", f.Desc.Number(), ")) {")
		g.P("if err := c.Require(", minor, ", ", strconv.Quote(string(meth.Desc.Name())+" with "+string(f.Desc.Name())), "); err != nil {")
		g.P("return nil, err")
		g.P("}")
		g.P("}")
	}
}

// drain writes <Method>All for a server-streaming RPC.
func (h *hostFile) drain(meth *protogen.Method, params string) {
	g := h.g
	out := g.QualifiedGoIdent(meth.Output.GoIdent)
	g.P("// ", meth.GoName, "All calls ", meth.GoName, " and returns every message of its stream, or")
	g.P("// those received before an error and the error.")
	g.P("func (c *Client) ", meth.GoName, "All(", params, ") ([]*", out, ", error) {")
	g.P("stream, err := c.", meth.GoName, "(ctx, in, opts...)")
	g.P("if err != nil {")
	g.P("return nil, err")
	g.P("}")
	g.P("var all []*", out)
	g.P("for {")
	g.P("msg, err := stream.Recv()")
	g.P("if err == ", ioPkg.Ident("EOF"), " {")
	g.P("return all, nil")
	g.P("}")
	g.P("if err != nil {")
	g.P("return all, err")
	g.P("}")
	g.P("all = append(all, msg)")
	g.P("}")
	g.P("}")
	g.P()
}

// open writes Majors and Open, with Adapters when there is an older major.
func (h *hostFile) open() {
	g, m := h.g, h.m
	majors := g.QualifiedGoIdent(managerPkg.Ident("Majors")) + "[*Client]"
	conn := g.QualifiedGoIdent(managerPkg.Ident("Conn"))
	info := g.QualifiedGoIdent(managerPkg.Ident("Info"))
	param, arg := "", ""
	if h.prev != nil {
		param, arg = "adapters Adapters", "adapters"
		h.adapters()
	}
	g.P("// Majors returns what manager.Dispense and conformance.HostMajor take for a")
	g.P("// host of ", m.kind, " v", m.num, ": this major", map[bool]string{true: ", and the previous one when its adapter is set.", false: "."}[h.prev != nil])
	g.P("func Majors(", param, ") ", majors, " {")
	g.P("majors := ", majors, "{")
	g.P("Major: func(conn *", conn, ", info ", info, ") (*Client, error) { return NewClient(conn, info), nil },")
	g.P("}")
	if h.prev != nil {
		p := h.prev
		g.P("if adapters.V", p.num, " != nil {")
		g.P("majors[", p.num, "] = func(conn *", conn, ", info ", info, ") (*Client, error) {")
		g.P("f := V", p.num, "Forward{V", p.num, ": ", g.QualifiedGoIdent(p.file.GoImportPath.Ident("NewClient")), "(conn, info), conn: conn}")
		g.P("return &Client{api: adapters.V", p.num, "(f), info: info}, nil")
		g.P("}")
		g.P("}")
	}
	g.P("return majors")
	g.P("}")
	g.P()
	g.P("// Open dispenses the ", m.kind, " plugin name from m as a host of ", m.kind, " v", m.num, " does:")
	g.P("// manager.Dispense with Majors(", arg, ").")
	g.P("func Open(ctx ", g.QualifiedGoIdent(contextPkg.Ident("Context")), ", m *", g.QualifiedGoIdent(managerPkg.Ident("Manager")), ", name string", map[bool]string{true: ", adapters Adapters", false: ""}[h.prev != nil], ") (*Client, error) {")
	g.P("return ", managerPkg.Ident("Dispense"), "(ctx, m, Kind, name, Majors(", arg, "))")
	g.P("}")
	g.P()
}

func (h *hostFile) adapters() {
	g, m, p := h.g, h.m, h.prev
	api := m.svc.GoName + "Client"
	g.P("// Adapters are the adapters a host of ", m.kind, " v", m.num, " uses for plugins of the")
	g.P("// previous major; a nil one leaves that major out.")
	g.P("type Adapters struct {")
	g.P("// V", p.num, " presents a ", m.kind, " v", p.num, " plugin as v", m.num, ". Build it on the V", p.num, "Forward it")
	g.P("// is given: embed it, and write the RPCs that changed.")
	g.P("V", p.num, " func(V", p.num, "Forward) ", api)
	g.P("}")
	g.P()
}

// rpcChange says how an RPC of m relates to the previous major.
type rpcChange int

const (
	unchanged rpcChange = iota // same request, response and streaming: forwarded
	added                      // not in the previous major: Unimplemented
	changed                    // left to the author
	unmatched                  // maybe a renamed RPC of the previous major: left to the author
)

// change says how meth relates to the previous major, and returns the
// previous major's RPC of the same name. An RPC of this major's first
// release that the previous major lacks, while the previous major has an
// RPC this one lacks, may be that RPC renamed: the generator cannot tell,
// so it is unmatched, left to the author (the adapter does not compile
// until it is written). An RPC of a later minor cannot be a rename (a
// minor removes nothing), so it is added.
func (h *hostFile) change(meth *protogen.Method) (rpcChange, *protogen.Method) {
	for _, old := range h.prev.svc.Methods {
		if old.Desc.Name() != meth.Desc.Name() {
			continue
		}
		if old.Desc.IsStreamingClient() != meth.Desc.IsStreamingClient() || old.Desc.IsStreamingServer() != meth.Desc.IsStreamingServer() ||
			!interchangeable(old.Input, meth.Input) || !interchangeable(old.Output, meth.Output) {
			return changed, old
		}
		return unchanged, old
	}
	if h.m.since[meth.Desc.Name()] == 0 && len(h.gone()) > 0 {
		return unmatched, nil
	}
	return added, nil
}

// gone returns the Go names of the previous major's RPCs that this major
// lacks: removed or renamed.
func (h *hostFile) gone() []string {
	var names []string
	for _, old := range h.prev.svc.Methods {
		if findMethod(h.m.svc, old) == nil {
			names = append(names, old.GoName)
		}
	}
	return names
}

// forward writes V<prev>Forward: the RPCs unchanged since the previous
// major, forwarded to it, and those it lacks, refused.
func (h *hostFile) forward() {
	g, m, p := h.g, h.m, h.prev
	name := fmt.Sprintf("V%dForward", p.num)
	var fw, add, ch, un []string
	for _, meth := range m.svc.Methods {
		switch c, _ := h.change(meth); c {
		case unchanged:
			fw = append(fw, meth.GoName)
		case added:
			add = append(add, meth.GoName)
		case unmatched:
			un = append(un, meth.GoName)
			ch = append(ch, meth.GoName)
		default:
			ch = append(ch, meth.GoName)
		}
	}
	g.P("// ", name, " is the generated part of the adapter that presents a ", m.kind, " v", p.num)
	g.P("// plugin as v", m.num, ". It forwards the RPCs whose request and response are unchanged")
	g.P("// since v", p.num, " (", list(fw), ") and refuses those v", p.num, " lacks (", list(add), ") with")
	g.P("// codes.Unimplemented. The adapter embeds it and writes the RPCs that")
	g.P("// changed (", list(ch), "), calling the plugin through V", p.num, "; it may also")
	g.P("// replace a refusal with an emulation.")
	if len(un) > 0 {
		g.P("//")
		g.P("// v", p.num, " lacks ", list(un), ", and v", m.num, " lacks v", p.num, "'s ", list(h.gone()), ". The generator cannot")
		g.P("// tell a renamed RPC from a new one, so ", list(un), map[bool]string{true: " is", false: " are"}[len(un) == 1], " the adapter's: a renamed")
		g.P("// RPC calls its v", p.num, " RPC through V", p.num, ", a new one returns f.Unimplemented.")
	}
	g.P("type ", name, " struct {")
	g.P("// V", p.num, " is the plugin's own v", p.num, " client.")
	g.P("V", p.num, " *", g.QualifiedGoIdent(p.file.GoImportPath.Ident("Client")))
	g.P("conn ", grpcPkg.Ident("ClientConnInterface"))
	g.P("}")
	g.P()
	g.P("// Unimplemented returns a codes.Unimplemented error that names the plugin and")
	g.P("// its major, followed by the reason format and args give.")
	g.P("func (f ", name, ") Unimplemented(format string, args ...any) error {")
	g.P("return ", statusPkg.Ident("Errorf"), "(", codesPkg.Ident("Unimplemented"), ", \"plugin %s speaks ", m.kind, " v", p.num, ": %s\", f.V", p.num, ".Info().Name, ", fmtPkg.Ident("Sprintf"), "(format, args...))")
	g.P("}")
	g.P()
	for _, meth := range m.svc.Methods {
		switch c, old := h.change(meth); c {
		case unchanged:
			h.forwardMethod(name, meth, old)
		case added:
			h.refuseMethod(name, meth)
		case changed:
			if !old.Desc.IsStreamingClient() && old.Desc.IsStreamingServer() == meth.Desc.IsStreamingServer() && interchangeable(old.Output, meth.Output) {
				h.halfForward(name, meth, old)
			}
		}
	}
}

// list joins names for a comment.
func list(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	s := ""
	for i, n := range names {
		switch {
		case i == 0:
		case i == len(names)-1:
			s += " and "
		default:
			s += ", "
		}
		s += n
	}
	return s
}
