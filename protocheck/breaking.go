package protocheck

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/bufbuild/protocompile/protoutil"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
)

// Options configures Breaking. The zero value checks FILE and ADR044 rules
// with plugkit's improvements over buf switched on.
type Options struct {
	// Use lists categories and rule IDs to check; empty means DefaultUse
	// (FILE and ADR044).
	Use []string
	// Except lists categories and rule IDs to leave out.
	Except []string
	// BufCompat switches off plugkit's analysis beyond buf: renamed and
	// moved fields and messages are reported as buf reports them (separate
	// deletes, name and type changes), a field whose message type became a
	// structurally identical message is a WIRE/WIRE_JSON break, and
	// PACKAGE_*_NO_DELETE rules only look at packages that still have an
	// element of the same kind, as buf v1.75 does.
	BufCompat bool
	// BufNames names messages, enums and services in finding messages as buf
	// does, by short or nested name ("Response"), and keeps buf's wording
	// byte for byte. By default plugkit names them by full name
	// ("tfplugin5.GetProviderSchema.Response"), which is unambiguous.
	BufNames bool
	// SinceName, if set, is the only project name accepted in Since lines
	// ("Since: NAME VERSION").
	SinceName string
}

// Breaking compares new against old and returns the findings of the
// enabled rules, sorted as buf sorts them. It returns an error only for an
// unknown rule or category in opts.
func Breaking(old, new *Image, opts Options) ([]Finding, error) {
	on, err := SelectRules(opts.Use, opts.Except)
	if err != nil {
		return nil, err
	}
	c := &checker{old: newIndex(old), new: newIndex(new), opts: opts, on: on}
	c.run()
	SortFindings(c.out)
	return c.out, nil
}

// elem is one named element of an image with the file that declares it.
type elem[D protoreflect.Descriptor] struct {
	d    D
	file *File
}

// index gives by-name access to the elements of an image.
type index struct {
	img        *Image
	messages   map[protoreflect.FullName]elem[protoreflect.MessageDescriptor]
	enums      map[protoreflect.FullName]elem[protoreflect.EnumDescriptor]
	services   map[protoreflect.FullName]elem[protoreflect.ServiceDescriptor]
	extensions map[protoreflect.FullName]elem[protoreflect.FieldDescriptor]
	packages   map[string][]*File
	// importPackages are the packages of imported files (buf counts them
	// in FILE_NO_DELETE and PACKAGE_NO_DELETE).
	importPackages map[string]bool
	// order keeps declaration order for deterministic walks.
	messageOrder []protoreflect.FullName
	enumOrder    []protoreflect.FullName
	serviceOrder []protoreflect.FullName
}

func newIndex(img *Image) *index {
	x := &index{
		img:            img,
		messages:       map[protoreflect.FullName]elem[protoreflect.MessageDescriptor]{},
		enums:          map[protoreflect.FullName]elem[protoreflect.EnumDescriptor]{},
		services:       map[protoreflect.FullName]elem[protoreflect.ServiceDescriptor]{},
		extensions:     map[protoreflect.FullName]elem[protoreflect.FieldDescriptor]{},
		packages:       map[string][]*File{},
		importPackages: map[string]bool{},
	}
	for _, fd := range img.imports {
		x.importPackages[string(fd.Package())] = true
	}
	for _, f := range img.Files {
		fd := f.Desc
		x.packages[string(fd.Package())] = append(x.packages[string(fd.Package())], f)
		walkFile(fd, func(md protoreflect.MessageDescriptor) {
			x.messages[md.FullName()] = elem[protoreflect.MessageDescriptor]{md, f}
			x.messageOrder = append(x.messageOrder, md.FullName())
		}, func(ed protoreflect.EnumDescriptor) {
			x.enums[ed.FullName()] = elem[protoreflect.EnumDescriptor]{ed, f}
			x.enumOrder = append(x.enumOrder, ed.FullName())
		}, func(xd protoreflect.FieldDescriptor) {
			x.extensions[xd.FullName()] = elem[protoreflect.FieldDescriptor]{xd, f}
		})
		for i := 0; i < fd.Services().Len(); i++ {
			sd := fd.Services().Get(i)
			x.services[sd.FullName()] = elem[protoreflect.ServiceDescriptor]{sd, f}
			x.serviceOrder = append(x.serviceOrder, sd.FullName())
		}
	}
	return x
}

// walkFile calls the functions for every message (including map entries),
// enum and extension of a file, outer elements first.
func walkFile(fd protoreflect.FileDescriptor, msg func(protoreflect.MessageDescriptor), enum func(protoreflect.EnumDescriptor), ext func(protoreflect.FieldDescriptor)) {
	var walkMsgs func(ms protoreflect.MessageDescriptors)
	walkEnums := func(es protoreflect.EnumDescriptors) {
		for i := 0; i < es.Len(); i++ {
			enum(es.Get(i))
		}
	}
	walkExts := func(xs protoreflect.ExtensionDescriptors) {
		for i := 0; i < xs.Len(); i++ {
			ext(xs.Get(i))
		}
	}
	walkMsgs = func(ms protoreflect.MessageDescriptors) {
		for i := 0; i < ms.Len(); i++ {
			md := ms.Get(i)
			msg(md)
			walkEnums(md.Enums())
			walkExts(md.Extensions())
			walkMsgs(md.Messages())
		}
	}
	walkEnums(fd.Enums())
	walkExts(fd.Extensions())
	walkMsgs(fd.Messages())
}

// nestedName is a full name without the package: "Outer.Inner".
func nestedName(d protoreflect.Descriptor) string {
	pkg := string(d.ParentFile().Package())
	n := string(d.FullName())
	if pkg != "" {
		n = strings.TrimPrefix(n, pkg+".")
	}
	return n
}

type checker struct {
	old, new *index
	opts     Options
	on       map[string]bool
	out      []Finding
	lk       lookup
}

// pos is a resolved source span.
type pos struct {
	path                   string
	sl, sc, el, ec         int
	hasPath                bool
	noLocationFileFallback bool
}

// descPath returns the source path of a descriptor inside its file.
func descPath(d protoreflect.Descriptor) []int32 {
	switch d := d.(type) {
	case protoreflect.FileDescriptor:
		return nil
	case protoreflect.MessageDescriptor:
		if p, ok := d.Parent().(protoreflect.MessageDescriptor); ok {
			return append(descPath(p), 3, int32(d.Index()))
		}
		return []int32{4, int32(d.Index())}
	case protoreflect.FieldDescriptor:
		if d.IsExtension() {
			if p, ok := d.Parent().(protoreflect.MessageDescriptor); ok {
				return append(descPath(p), 6, int32(d.Index()))
			}
			return []int32{7, int32(d.Index())}
		}
		return append(descPath(d.Parent()), 2, int32(d.Index()))
	case protoreflect.OneofDescriptor:
		return append(descPath(d.Parent()), 8, int32(d.Index()))
	case protoreflect.EnumDescriptor:
		if p, ok := d.Parent().(protoreflect.MessageDescriptor); ok {
			return append(descPath(p), 4, int32(d.Index()))
		}
		return []int32{5, int32(d.Index())}
	case protoreflect.EnumValueDescriptor:
		return append(descPath(d.Parent()), 2, int32(d.Index()))
	case protoreflect.ServiceDescriptor:
		return []int32{6, int32(d.Index())}
	case protoreflect.MethodDescriptor:
		return append(descPath(d.Parent()), 2, int32(d.Index()))
	}
	return nil
}

// sourceLoc looks up the location of d's sub-path; ok is false when the
// file has no such location.
func sourceLoc(d protoreflect.Descriptor, sub []int32) (protoreflect.SourceLocation, bool) {
	p := descPath(d)
	full := make(protoreflect.SourcePath, 0, len(p)+len(sub))
	full = append(full, p...)
	full = append(full, sub...)
	if len(full) == 0 {
		return protoreflect.SourceLocation{}, false
	}
	loc := d.ParentFile().SourceLocations().ByPath(full)
	if loc.Path == nil && loc.StartLine == 0 && loc.EndLine == 0 && loc.StartColumn == 0 && loc.EndColumn == 0 {
		return loc, false
	}
	return loc, true
}

// at resolves the first existing location among d's sub-paths (nil means d
// itself); if none exists, the finding points at the start of d's file.
func at(d protoreflect.Descriptor, subs ...[]int32) pos {
	p := pos{path: d.ParentFile().Path(), hasPath: true}
	if len(subs) == 0 {
		subs = [][]int32{nil}
	}
	for _, sub := range subs {
		if loc, ok := sourceLoc(d, sub); ok {
			p.sl, p.sc, p.el, p.ec = loc.StartLine+1, loc.StartColumn+1, loc.EndLine+1, loc.EndColumn+1
			return p
		}
	}
	// Fields of synthetic map entries have no source of their own: they
	// are written as the map<K, V> type of the field that uses the entry.
	if f, ok := d.(protoreflect.FieldDescriptor); ok && !f.IsExtension() && f.ContainingMessage().IsMapEntry() {
		entry := f.ContainingMessage()
		if parent, ok := entry.Parent().(protoreflect.MessageDescriptor); ok {
			for i := 0; i < parent.Fields().Len(); i++ {
				if mf := parent.Fields().Get(i); mf.Message() != nil && mf.Message().FullName() == entry.FullName() {
					return at(mf, subTypeName, nil)
				}
			}
		}
	}
	p.sl, p.sc, p.el, p.ec = 1, 1, 1, 1
	return p
}

// atFile points at the start of a file.
func atFile(path string) pos { return pos{path: path, hasPath: path != "", sl: 1, sc: 1, el: 1, ec: 1} }

func (c *checker) add(rule string, p pos, hint string, format string, args ...any) {
	if !c.on[rule] {
		return
	}
	sev := SeverityError
	if r := ruleByID[rule]; r != nil && r.Info {
		sev = SeverityInfo
	}
	c.out = append(c.out, Finding{
		Path: p.path, StartLine: p.sl, StartColumn: p.sc, EndLine: p.el, EndColumn: p.ec,
		Type: rule, Message: fmt.Sprintf(format, args...), Severity: sev, Hint: hint,
	})
}

func (c *checker) anyOn(rules ...string) bool {
	for _, r := range rules {
		if c.on[r] {
			return true
		}
	}
	return false
}

// Naming: buf uses short names, plugkit full names.

func (c *checker) msgName(md protoreflect.MessageDescriptor) string {
	if c.opts.BufNames {
		return string(md.Name())
	}
	return string(md.FullName())
}

func (c *checker) enumName(ed protoreflect.EnumDescriptor) string {
	if c.opts.BufNames {
		return string(ed.Name())
	}
	return string(ed.FullName())
}

func (c *checker) serviceName(sd protoreflect.ServiceDescriptor) string {
	if c.opts.BufNames {
		return string(sd.Name())
	}
	return string(sd.FullName())
}

// deletedName names a deleted element: nested name for buf, full name for plugkit.
func (c *checker) deletedName(d protoreflect.Descriptor) string {
	if c.opts.BufNames {
		return nestedName(d)
	}
	return string(d.FullName())
}

func (c *checker) fieldDesc(f protoreflect.FieldDescriptor) string {
	name := string(f.Name())
	if f.IsExtension() {
		name = string(f.FullName())
	}
	return c.fieldDescWithName(f, name)
}

func (c *checker) fieldDescWithName(f protoreflect.FieldDescriptor, name string) string {
	if name != "" {
		name = fmt.Sprintf(" with name %q", name)
	}
	if f.IsExtension() {
		return fmt.Sprintf("Extension %q%s on message %q", strconv.Itoa(int(f.Number())), name, string(f.ContainingMessage().FullName()))
	}
	return fmt.Sprintf("Field %q%s on message %q", strconv.Itoa(int(f.Number())), name, c.msgName(f.ContainingMessage()))
}

func (c *checker) run() {
	c.checkFiles()
	c.checkPackages()
	c.checkMessages()
	c.checkEnums()
	c.checkServices()
	c.checkExtensions()
	if c.anyOn("SINCE_COMMENT_MISSING", "SINCE_COMMENT_MALFORMED", "RESERVED_ADDED", "DEPRECATED_ADDED") {
		c.checkADR044()
	}
}

// fileOption describes one FILE_SAME_* rule.
type fileOption struct {
	rule, name string
	number     int32
	value      func(o *descriptorpb.FileOptions) string
}

func boolStr(b bool) string { return strconv.FormatBool(b) }

var fileOptions = []fileOption{
	{"FILE_SAME_CC_ENABLE_ARENAS", "cc_enable_arenas", 31, func(o *descriptorpb.FileOptions) string { return boolStr(o.GetCcEnableArenas()) }},
	{"FILE_SAME_CC_GENERIC_SERVICES", "cc_generic_services", 16, func(o *descriptorpb.FileOptions) string { return boolStr(o.GetCcGenericServices()) }},
	{"FILE_SAME_CSHARP_NAMESPACE", "csharp_namespace", 37, func(o *descriptorpb.FileOptions) string { return o.GetCsharpNamespace() }},
	{"FILE_SAME_GO_PACKAGE", "go_package", 11, func(o *descriptorpb.FileOptions) string { return o.GetGoPackage() }},
	{"FILE_SAME_JAVA_GENERIC_SERVICES", "java_generic_services", 17, func(o *descriptorpb.FileOptions) string { return boolStr(o.GetJavaGenericServices()) }},
	{"FILE_SAME_JAVA_MULTIPLE_FILES", "java_multiple_files", 10, func(o *descriptorpb.FileOptions) string { return boolStr(o.GetJavaMultipleFiles()) }},
	{"FILE_SAME_JAVA_OUTER_CLASSNAME", "java_outer_classname", 8, func(o *descriptorpb.FileOptions) string { return o.GetJavaOuterClassname() }},
	{"FILE_SAME_JAVA_PACKAGE", "java_package", 1, func(o *descriptorpb.FileOptions) string { return o.GetJavaPackage() }},
	{"FILE_SAME_OBJC_CLASS_PREFIX", "objc_class_prefix", 36, func(o *descriptorpb.FileOptions) string { return o.GetObjcClassPrefix() }},
	{"FILE_SAME_OPTIMIZE_FOR", "optimize_for", 9, func(o *descriptorpb.FileOptions) string { return o.GetOptimizeFor().String() }},
	{"FILE_SAME_PHP_CLASS_PREFIX", "php_class_prefix", 40, func(o *descriptorpb.FileOptions) string { return o.GetPhpClassPrefix() }},
	{"FILE_SAME_PHP_METADATA_NAMESPACE", "php_metadata_namespace", 44, func(o *descriptorpb.FileOptions) string { return o.GetPhpMetadataNamespace() }},
	{"FILE_SAME_PHP_NAMESPACE", "php_namespace", 41, func(o *descriptorpb.FileOptions) string { return o.GetPhpNamespace() }},
	{"FILE_SAME_PY_GENERIC_SERVICES", "py_generic_services", 18, func(o *descriptorpb.FileOptions) string { return boolStr(o.GetPyGenericServices()) }},
	{"FILE_SAME_RUBY_PACKAGE", "ruby_package", 45, func(o *descriptorpb.FileOptions) string { return o.GetRubyPackage() }},
	{"FILE_SAME_SWIFT_PREFIX", "swift_prefix", 39, func(o *descriptorpb.FileOptions) string { return o.GetSwiftPrefix() }},
}

func fileOpts(fd protoreflect.FileDescriptor) *descriptorpb.FileOptions {
	o, _ := fd.Options().(*descriptorpb.FileOptions)
	if o == nil {
		o = &descriptorpb.FileOptions{}
	}
	return o
}

func syntaxString(fd protoreflect.FileDescriptor) string {
	switch fd.Syntax() {
	case protoreflect.Proto3:
		return "proto3"
	case protoreflect.Editions:
		return "editions"
	}
	return "proto2"
}

// checkFiles runs the rules that pair files by path.
func (c *checker) checkFiles() {
	for _, of := range c.old.img.Files {
		nf := c.new.img.File(of.Path)
		if nf == nil {
			c.add("FILE_NO_DELETE", atFile(""), "", "Previously present file %q was deleted.", of.Path)
			continue
		}
		ofd, nfd := of.Desc, nf.Desc
		oo, no := fileOpts(ofd), fileOpts(nfd)
		for _, opt := range fileOptions {
			if !c.on[opt.rule] {
				continue
			}
			if a, b := opt.value(oo), opt.value(no); a != b {
				c.add(opt.rule, at(nfd, []int32{8, opt.number}), "", "File option %q changed from %q to %q.", opt.name, a, b)
			}
		}
		if a, b := syntaxString(ofd), syntaxString(nfd); a != b {
			c.add("FILE_SAME_SYNTAX", at(nfd, []int32{12}), "", "File syntax changed from %q to %q.", a, b)
		}
		if a, b := string(ofd.Package()), string(nfd.Package()); a != b {
			c.add("FILE_SAME_PACKAGE", at(nfd, []int32{2}), "", "File package changed from %q to %q.", a, b)
		}
		c.checkFileDeletions(of, nf)
	}
	if c.opts.BufCompat {
		// buf also pairs the files the inputs import.
		var gone []string
		for p := range c.old.img.imports {
			if c.new.img.File(p) == nil && c.new.img.imports[p] == nil {
				gone = append(gone, p)
			}
		}
		sort.Strings(gone)
		for _, p := range gone {
			c.add("FILE_NO_DELETE", atFile(""), "", "Previously present file %q was deleted.", p)
		}
	}
}

// nestedMessages maps nested names to messages of one file.
func nestedMessages(fd protoreflect.FileDescriptor) map[string]protoreflect.MessageDescriptor {
	m := map[string]protoreflect.MessageDescriptor{}
	walkFile(fd, func(md protoreflect.MessageDescriptor) { m[nestedName(md)] = md }, func(protoreflect.EnumDescriptor) {}, func(protoreflect.FieldDescriptor) {})
	return m
}

// deletedAt finds where to report an element deleted from file nf: its
// nearest enclosing message that still exists, else the file start.
func deletedAt(nf *File, msgs map[string]protoreflect.MessageDescriptor, nested string) pos {
	parts := strings.Split(nested, ".")
	for i := len(parts) - 1; i > 0; i-- {
		if md, ok := msgs[strings.Join(parts[:i], ".")]; ok {
			return at(md)
		}
	}
	return atFile(nf.Path)
}

func (c *checker) checkFileDeletions(of, nf *File) {
	if !c.anyOn("MESSAGE_NO_DELETE", "ENUM_NO_DELETE", "EXTENSION_NO_DELETE", "SERVICE_NO_DELETE") {
		return
	}
	newMsgs := nestedMessages(nf.Desc)
	newEnums := map[string]bool{}
	newExts := map[string]bool{}
	walkFile(nf.Desc, func(protoreflect.MessageDescriptor) {}, func(ed protoreflect.EnumDescriptor) { newEnums[nestedName(ed)] = true },
		func(xd protoreflect.FieldDescriptor) { newExts[nestedName(xd)] = true })
	walkFile(of.Desc, func(md protoreflect.MessageDescriptor) {
		n := nestedName(md)
		if _, ok := newMsgs[n]; ok {
			return
		}
		msg := fmt.Sprintf("Previously present message %q was deleted from file.", c.deletedName(md))
		hint := ""
		if !c.opts.BufCompat {
			if moved := c.movedTo(md); moved != nil {
				msg = fmt.Sprintf("Previously present message %q was deleted from file: it moved to %q, which has the same fields (and maybe more).", c.deletedName(md), c.msgName(moved))
				hint = c.moveHint(md, moved)
			}
		}
		c.add("MESSAGE_NO_DELETE", deletedAt(nf, newMsgs, n), hint, "%s", msg)
	}, func(ed protoreflect.EnumDescriptor) {
		n := nestedName(ed)
		if !newEnums[n] {
			c.add("ENUM_NO_DELETE", deletedAt(nf, newMsgs, n), "", "Previously present enum %q was deleted from file.", c.deletedName(ed))
		}
	}, func(xd protoreflect.FieldDescriptor) {
		n := nestedName(xd)
		if !newExts[n] {
			name := n
			if !c.opts.BufNames {
				name = string(xd.FullName())
			}
			c.add("EXTENSION_NO_DELETE", deletedAt(nf, newMsgs, n), "", "Previously present extension %q was deleted from file.", name)
		}
	})
	newSvcs := map[protoreflect.Name]bool{}
	for i := 0; i < nf.Desc.Services().Len(); i++ {
		newSvcs[nf.Desc.Services().Get(i).Name()] = true
	}
	for i := 0; i < of.Desc.Services().Len(); i++ {
		sd := of.Desc.Services().Get(i)
		if !newSvcs[sd.Name()] {
			c.add("SERVICE_NO_DELETE", atFile(nf.Path), "", "Previously present service %q was deleted from file.", c.serviceName(sd))
		}
	}
}

// movedTo finds, for a message deleted from the new image, a message that
// only the new image has and that is structurally identical to it.
func (c *checker) movedTo(old protoreflect.MessageDescriptor) protoreflect.MessageDescriptor {
	if _, still := c.new.messages[old.FullName()]; still {
		return nil
	}
	var best protoreflect.MessageDescriptor
	for _, name := range c.new.messageOrder {
		if _, existed := c.old.messages[name]; existed {
			continue
		}
		cand := c.new.messages[name].d
		if cand.IsMapEntry() || !sameStructure(&c.lk, old, cand, map[[2]protoreflect.FullName]bool{}) {
			continue
		}
		if best == nil || (cand.Name() == old.Name() && best.Name() != old.Name()) {
			best = cand
		}
	}
	return best
}

// moveHint says which fields now refer to the moved message.
func (c *checker) moveHint(old, moved protoreflect.MessageDescriptor) string {
	var users []string
	for _, name := range c.new.messageOrder {
		md := c.new.messages[name].d
		fs := md.Fields()
		for i := 0; i < fs.Len(); i++ {
			f := fs.Get(i)
			if f.Message() == nil || f.Message().FullName() != moved.FullName() {
				continue
			}
			if om, ok := c.old.messages[md.FullName()]; ok {
				if of := c.lk.fieldByNumber(om.d, f.Number()); of != nil && of.Message() != nil && of.Message().FullName() == old.FullName() {
					users = append(users, fmt.Sprintf("%s.%s", md.FullName(), f.Name()))
				}
			}
		}
	}
	h := "generated code sees a new name, the binary and JSON encodings are unchanged"
	if len(users) > 0 {
		h += "; fields that now use " + string(moved.FullName()) + ": " + strings.Join(users, ", ")
	}
	return h
}

// sameStructure reports whether message b reads everything message a
// writes, on the wire and in JSON: every field of a exists in b with the
// same number, name, JSON name, kind and cardinality, message and enum
// types compared the same way, recursively; b may add fields (and enums
// may add values), as any minor version may.
func sameStructure(lk *lookup, a, b protoreflect.MessageDescriptor, seen map[[2]protoreflect.FullName]bool) bool {
	key := [2]protoreflect.FullName{a.FullName(), b.FullName()}
	if a.FullName() == b.FullName() || seen[key] {
		return true
	}
	seen[key] = true
	af := a.Fields()
	if a.IsMapEntry() != b.IsMapEntry() {
		return false
	}
	for i := 0; i < af.Len(); i++ {
		x := af.Get(i)
		y := lk.fieldByNumber(b, x.Number())
		if y == nil || x.Name() != y.Name() || x.JSONName() != y.JSONName() || x.Kind() != y.Kind() ||
			getCardinality(x) != getCardinality(y) || (x.ContainingOneof() == nil) != (y.ContainingOneof() == nil) {
			return false
		}
		switch x.Kind() {
		case protoreflect.MessageKind, protoreflect.GroupKind:
			if !sameStructure(lk, x.Message(), y.Message(), seen) {
				return false
			}
		case protoreflect.EnumKind:
			if !sameEnum(lk, x.Enum(), y.Enum()) {
				return false
			}
		}
	}
	return true
}

func sameEnum(lk *lookup, a, b protoreflect.EnumDescriptor) bool {
	if a.FullName() == b.FullName() {
		return true
	}
	av := a.Values()
	for i := 0; i < av.Len(); i++ {
		x := av.Get(i)
		y := lk.valueByName(b, x.Name())
		if y == nil || y.Number() != x.Number() {
			return false
		}
	}
	return true
}

// checkPackages runs FILE_NO_DELETE's package-level relatives.
func (c *checker) checkPackages() {
	if !c.anyOn("PACKAGE_NO_DELETE", "PACKAGE_MESSAGE_NO_DELETE", "PACKAGE_ENUM_NO_DELETE", "PACKAGE_SERVICE_NO_DELETE", "PACKAGE_EXTENSION_NO_DELETE") {
		return
	}
	pkgs := make([]string, 0, len(c.old.packages))
	for p := range c.old.packages {
		pkgs = append(pkgs, p)
	}
	if c.opts.BufCompat {
		for p := range c.old.importPackages {
			if _, own := c.old.packages[p]; !own {
				pkgs = append(pkgs, p)
			}
		}
	}
	sort.Strings(pkgs)
	pkgHas := func(x *index, pkg string, kind string) bool {
		for _, f := range x.packages[pkg] {
			fd := f.Desc
			switch kind {
			case "message":
				if fd.Messages().Len() > 0 {
					return true
				}
			case "enum":
				found := fd.Enums().Len() > 0
				walkFile(fd, func(md protoreflect.MessageDescriptor) {
					if md.Enums().Len() > 0 {
						found = true
					}
				}, func(protoreflect.EnumDescriptor) {}, func(protoreflect.FieldDescriptor) {})
				if found {
					return true
				}
			case "extension":
				found := false
				walkFile(fd, func(protoreflect.MessageDescriptor) {}, func(protoreflect.EnumDescriptor) {}, func(protoreflect.FieldDescriptor) { found = true })
				if found {
					return true
				}
			default:
				return true
			}
		}
		return false
	}
	for _, pkg := range pkgs {
		_, ok := c.new.packages[pkg]
		if !ok && c.opts.BufCompat && c.new.importPackages[pkg] {
			ok = true
		}
		if !ok {
			c.add("PACKAGE_NO_DELETE", atFile(""), "", "Previously present package %q was deleted.", pkg)
			continue
		}
		pairs := func(kind string) bool {
			if c.opts.BufCompat {
				return pkgHas(c.new, pkg, kind)
			}
			return true
		}
		where := func(oldFile string, nested string) pos {
			nf := c.new.img.File(oldFile)
			if nf == nil {
				return atFile("")
			}
			return deletedAt(nf, nestedMessages(nf.Desc), nested)
		}
		if c.on["PACKAGE_MESSAGE_NO_DELETE"] && pairs("message") {
			for _, name := range c.old.messageOrder {
				e := c.old.messages[name]
				if string(e.d.ParentFile().Package()) != pkg {
					continue
				}
				if _, ok := c.new.messages[name]; !ok {
					c.add("PACKAGE_MESSAGE_NO_DELETE", where(e.file.Path, nestedName(e.d)), "", "Previously present message %q was deleted from package %q.", c.deletedName(e.d), pkg)
				}
			}
		}
		if c.on["PACKAGE_ENUM_NO_DELETE"] && pairs("enum") {
			for _, name := range c.old.enumOrder {
				e := c.old.enums[name]
				if string(e.d.ParentFile().Package()) != pkg {
					continue
				}
				if _, ok := c.new.enums[name]; !ok {
					c.add("PACKAGE_ENUM_NO_DELETE", where(e.file.Path, nestedName(e.d)), "", "Previously present enum %q was deleted from package %q.", c.deletedName(e.d), pkg)
				}
			}
		}
		if c.on["PACKAGE_EXTENSION_NO_DELETE"] && pairs("extension") {
			names := make([]string, 0)
			for name := range c.old.extensions {
				names = append(names, string(name))
			}
			sort.Strings(names)
			for _, name := range names {
				e := c.old.extensions[protoreflect.FullName(name)]
				if string(e.d.ParentFile().Package()) != pkg {
					continue
				}
				if _, ok := c.new.extensions[protoreflect.FullName(name)]; !ok {
					c.add("PACKAGE_EXTENSION_NO_DELETE", where(e.file.Path, nestedName(e.d)), "", "Previously present extension %q was deleted from package %q.", c.deletedName(e.d), pkg)
				}
			}
		}
		if c.on["PACKAGE_SERVICE_NO_DELETE"] {
			for _, name := range c.old.serviceOrder {
				e := c.old.services[name]
				if string(e.d.ParentFile().Package()) != pkg {
					continue
				}
				if _, ok := c.new.services[name]; !ok {
					p := atFile("")
					if nf := c.new.img.File(e.file.Path); nf != nil {
						p = atFile(nf.Path)
					}
					c.add("PACKAGE_SERVICE_NO_DELETE", p, "", "Previously present service %q was deleted from package %q.", c.deletedName(e.d), pkg)
				}
			}
		}
	}
}

// cardinality is buf's classification of a field's label and presence.
type cardinality int

const (
	cardImplicit cardinality = iota
	cardExplicit
	cardRequired
	cardRepeated
	cardMap
)

// String gives buf's name of the cardinality.
func (k cardinality) String() string {
	switch k {
	case cardExplicit:
		return "optional with explicit presence"
	case cardRequired:
		return "required"
	case cardRepeated:
		return "repeated"
	case cardMap:
		return "map"
	}
	return "optional with implicit presence"
}

func getCardinality(f protoreflect.FieldDescriptor) cardinality {
	switch {
	case f.IsList():
		return cardRepeated
	case f.IsMap():
		return cardMap
	case f.Cardinality() == protoreflect.Required:
		return cardRequired
	case f.HasPresence():
		return cardExplicit
	}
	return cardImplicit
}

var wireCardGroup = map[cardinality]int{cardImplicit: 1, cardExplicit: 1, cardRequired: 2, cardRepeated: 3, cardMap: 3}
var wireJSONCardGroup = map[cardinality]int{cardImplicit: 1, cardExplicit: 1, cardRequired: 2, cardRepeated: 3, cardMap: 4}

var wireKindGroup = map[protoreflect.Kind]int{
	protoreflect.Int32Kind: 1, protoreflect.Int64Kind: 1, protoreflect.Uint32Kind: 1, protoreflect.Uint64Kind: 1, protoreflect.BoolKind: 1,
	protoreflect.Sint32Kind: 2, protoreflect.Sint64Kind: 2,
	protoreflect.StringKind: 3, protoreflect.BytesKind: 4,
	protoreflect.Fixed32Kind: 5, protoreflect.Sfixed32Kind: 5,
	protoreflect.Fixed64Kind: 6, protoreflect.Sfixed64Kind: 6,
	protoreflect.DoubleKind: 7, protoreflect.FloatKind: 8,
	protoreflect.GroupKind: 9, protoreflect.MessageKind: 10, protoreflect.EnumKind: 11,
}

var wireJSONKindGroup = map[protoreflect.Kind]int{
	protoreflect.Int32Kind: 1, protoreflect.Uint32Kind: 1,
	protoreflect.Int64Kind: 2, protoreflect.Uint64Kind: 2,
	protoreflect.Fixed32Kind: 3, protoreflect.Sfixed32Kind: 3,
	protoreflect.Fixed64Kind: 4, protoreflect.Sfixed64Kind: 4,
	protoreflect.BoolKind: 5, protoreflect.Sint32Kind: 6, protoreflect.Sint64Kind: 7,
	protoreflect.StringKind: 8, protoreflect.BytesKind: 9,
	protoreflect.DoubleKind: 10, protoreflect.FloatKind: 11,
	protoreflect.GroupKind: 12, protoreflect.MessageKind: 13, protoreflect.EnumKind: 14,
}

func kindString(f protoreflect.FieldDescriptor) string {
	if f.Kind() == protoreflect.GroupKind && f.ParentFile().Syntax() != protoreflect.Proto2 {
		return "message (delimited encoding)"
	}
	return f.Kind().String()
}

func isRef(k protoreflect.Kind) bool {
	return k == protoreflect.MessageKind || k == protoreflect.EnumKind || k == protoreflect.GroupKind
}

func typeName(f protoreflect.FieldDescriptor) string {
	switch {
	case f.Message() != nil:
		return string(f.Message().FullName())
	case f.Enum() != nil:
		return string(f.Enum().FullName())
	}
	return ""
}

var (
	subType     = []int32{5}
	subTypeName = []int32{6}
)

func typeLoc(f protoreflect.FieldDescriptor) []int32 {
	if isRef(f.Kind()) {
		return subTypeName
	}
	return subType
}

func (c *checker) addChangedType(rule string, of, nf protoreflect.FieldDescriptor, extra string) {
	if extra != "" {
		extra = " " + extra
	}
	c.add(rule, at(nf, typeLoc(nf)), "", "%s changed type from %q to %q.%s", c.fieldDesc(nf), kindString(of), kindString(nf), extra)
}

func (c *checker) addChangedTypeName(rule string, of, nf protoreflect.FieldDescriptor, hint string) {
	c.add(rule, at(nf, subTypeName), hint, "%s changed type from %q to %q.", c.fieldDesc(nf), typeName(of), typeName(nf))
}

// checkMessages runs the rules on messages paired by full name and on
// their fields paired by number.
func (c *checker) checkMessages() {
	for _, name := range c.old.messageOrder {
		oe := c.old.messages[name]
		ne, ok := c.new.messages[name]
		if !ok {
			continue
		}
		c.checkMessagePair(oe.d, ne.d)
	}
}

func msgOpts(md protoreflect.MessageDescriptor) *descriptorpb.MessageOptions {
	o, _ := md.Options().(*descriptorpb.MessageOptions)
	if o == nil {
		o = &descriptorpb.MessageOptions{}
	}
	return o
}

func fieldOpts(f protoreflect.FieldDescriptor) *descriptorpb.FieldOptions {
	o, _ := f.Options().(*descriptorpb.FieldOptions)
	if o == nil {
		o = &descriptorpb.FieldOptions{}
	}
	return o
}

// feature resolves a google.protobuf.FeatureSet field for d.
func feature(d protoreflect.Descriptor, name protoreflect.Name) protoreflect.EnumNumber {
	fd := (&descriptorpb.FeatureSet{}).ProtoReflect().Descriptor().Fields().ByName(name)
	v, err := protoutil.ResolveFeature(d, fd)
	if err != nil {
		return 0
	}
	return v.Enum()
}

func jsonFormat(d protoreflect.Descriptor) descriptorpb.FeatureSet_JsonFormat {
	return descriptorpb.FeatureSet_JsonFormat(feature(d, "json_format"))
}

func (c *checker) checkMessagePair(om, nm protoreflect.MessageDescriptor) {
	// Reserved and extension ranges.
	if c.on["EXTENSION_MESSAGE_NO_DELETE"] {
		c.checkRanges("EXTENSION_MESSAGE_NO_DELETE", "extension", nm, c.msgName(nm), fieldRanges(om.ExtensionRanges()), fieldRanges(nm.ExtensionRanges()), messageMax(nm))
	}
	if c.on["RESERVED_MESSAGE_NO_DELETE"] {
		c.checkRanges("RESERVED_MESSAGE_NO_DELETE", "reserved", nm, c.msgName(nm), fieldRanges(om.ReservedRanges()), fieldRanges(nm.ReservedRanges()), messageMax(nm))
		for i := 0; i < om.ReservedNames().Len(); i++ {
			n := om.ReservedNames().Get(i)
			if !nm.ReservedNames().Has(n) {
				c.add("RESERVED_MESSAGE_NO_DELETE", at(nm), "", "Previously present reserved name %q on message %q was deleted.", string(n), c.msgName(nm))
			}
		}
	}
	if !msgOpts(om).GetNoStandardDescriptorAccessor() && msgOpts(nm).GetNoStandardDescriptorAccessor() {
		c.add("MESSAGE_NO_REMOVE_STANDARD_DESCRIPTOR_ACCESSOR", at(nm, []int32{7, 2}, nil), "", "Message option \"no_standard_descriptor_accessor\" changed from %q to %q.", "false", "true")
	}
	if c.on["MESSAGE_SAME_JSON_FORMAT"] {
		if a, b := jsonFormat(om), jsonFormat(nm); a == descriptorpb.FeatureSet_ALLOW && b != descriptorpb.FeatureSet_ALLOW {
			c.add("MESSAGE_SAME_JSON_FORMAT", at(nm, []int32{7, 12, 6}, nil), "", "Message %q JSON format support changed from %v to %v.", c.msgName(nm), a, b)
		}
	}
	// Oneofs.
	for i := 0; i < om.Oneofs().Len(); i++ {
		oo := om.Oneofs().Get(i)
		if oo.IsSynthetic() {
			continue
		}
		if nm.Oneofs().ByName(oo.Name()) == nil {
			c.add("ONEOF_NO_DELETE", at(nm), "", "Previously present oneof %q on message %q was deleted.", string(oo.Name()), c.msgName(nm))
		}
	}
	// Required fields.
	if c.on["MESSAGE_SAME_REQUIRED_FIELDS"] {
		for i := 0; i < om.Fields().Len(); i++ {
			of := om.Fields().Get(i)
			if of.Cardinality() != protoreflect.Required {
				continue
			}
			if nf := c.lk.fieldByNumber(nm, of.Number()); nf == nil || nf.Cardinality() != protoreflect.Required {
				c.add("MESSAGE_SAME_REQUIRED_FIELDS", at(nm), "", "Message %q had required field \"%d\" deleted. Required fields must always be sent, so if one side does not know about the required field, this will result in a breakage.", c.msgName(om), of.Number())
			}
		}
		for i := 0; i < nm.Fields().Len(); i++ {
			nf := nm.Fields().Get(i)
			if nf.Cardinality() != protoreflect.Required {
				continue
			}
			if of := c.lk.fieldByNumber(om, nf.Number()); of == nil || of.Cardinality() != protoreflect.Required {
				c.add("MESSAGE_SAME_REQUIRED_FIELDS", at(nf), "", "Message %q had required field \"%d\" added. Required fields must always be sent, so if one side does not know about the required field, this will result in a breakage.", c.msgName(nm), nf.Number())
			}
		}
	}
	// Renamed and renumbered fields (plugkit only).
	renumbered := map[protoreflect.FieldNumber]protoreflect.FieldDescriptor{}
	foldedName := map[protoreflect.FieldNumber]bool{}
	if !c.opts.BufCompat {
		for i := 0; i < om.Fields().Len(); i++ {
			of := om.Fields().Get(i)
			if c.lk.fieldByNumber(nm, of.Number()) != nil {
				continue
			}
			if nf := c.lk.fieldByName(nm, of.Name()); nf != nil {
				renumbered[of.Number()] = nf
				if prev := c.lk.fieldByNumber(om, nf.Number()); prev != nil && prev.Name() != nf.Name() {
					foldedName[nf.Number()] = true
				}
			}
		}
	}
	// Deleted fields.
	for i := 0; i < om.Fields().Len(); i++ {
		of := om.Fields().Get(i)
		if c.lk.fieldByNumber(nm, of.Number()) != nil {
			continue
		}
		desc := c.fieldDesc(of)
		desc = strings.ToLower(desc[:1]) + desc[1:]
		numReserved := inFieldRanges(nm.ReservedRanges(), of.Number())
		nameReserved := nm.ReservedNames().Has(of.Name())
		if nf, ok := renumbered[of.Number()]; ok {
			msg := fmt.Sprintf("Previously present %s was deleted: the field %q now has number %d.", desc, string(of.Name()), nf.Number())
			hint := fmt.Sprintf("renumbering a field changes its binary encoding; keep number %d for %q", of.Number(), string(of.Name()))
			if prev := c.lk.fieldByNumber(om, nf.Number()); prev != nil && prev.Name() != nf.Name() {
				hint += fmt.Sprintf(" (number %d was %q before)", nf.Number(), string(prev.Name()))
			}
			c.add("FIELD_NO_DELETE", at(nm), hint, "%s", msg)
			if !numReserved {
				c.add("FIELD_NO_DELETE_UNLESS_NUMBER_RESERVED", at(nm), hint, "Previously present %s was deleted without reserving the number \"%d\".", desc, of.Number())
			}
			continue
		}
		c.add("FIELD_NO_DELETE", at(nm), "", "Previously present %s was deleted.", desc)
		if !numReserved {
			c.add("FIELD_NO_DELETE_UNLESS_NUMBER_RESERVED", at(nm), "", "Previously present %s was deleted without reserving the number \"%d\".", desc, of.Number())
		}
		if !nameReserved {
			c.add("FIELD_NO_DELETE_UNLESS_NAME_RESERVED", at(nm), "", "Previously present %s was deleted without reserving the name %q.", desc, string(of.Name()))
		}
	}
	// Field pairs.
	for i := 0; i < om.Fields().Len(); i++ {
		of := om.Fields().Get(i)
		nf := c.lk.fieldByNumber(nm, of.Number())
		if nf == nil {
			continue
		}
		c.checkFieldPair(of, nf, foldedName[nf.Number()])
	}
}

// checkExtensions pairs extensions by full name and runs the field rules.
func (c *checker) checkExtensions() {
	names := make([]string, 0, len(c.old.extensions))
	for n := range c.old.extensions {
		names = append(names, string(n))
	}
	sort.Strings(names)
	for _, n := range names {
		oe := c.old.extensions[protoreflect.FullName(n)]
		if ne, ok := c.new.extensions[protoreflect.FullName(n)]; ok {
			c.checkFieldPair(oe.d, ne.d, false)
		}
	}
}

func is64(f protoreflect.FieldDescriptor) bool {
	switch f.Kind() {
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind:
		return true
	}
	return false
}

func isStringish(f protoreflect.FieldDescriptor) bool {
	return f.Kind() == protoreflect.StringKind || f.Kind() == protoreflect.BytesKind
}

// cppStringType returns the C++ string type of a field and whether it is a
// STRING_PIECE.
func cppStringType(f protoreflect.FieldDescriptor) (string, bool) {
	o := fieldOpts(f)
	if o.Ctype != nil {
		switch o.GetCtype() {
		case descriptorpb.FieldOptions_CORD:
			return "CORD", false
		case descriptorpb.FieldOptions_STRING_PIECE:
			return "STRING", true
		}
	}
	return "STRING", false
}

func javaUTF8(f protoreflect.FieldDescriptor) string {
	def := descriptorpb.FeatureSet_Utf8Validation(feature(f, "utf8_validation"))
	o := fileOpts(f.ParentFile())
	if o.GetJavaStringCheckUtf8() {
		return descriptorpb.FeatureSet_VERIFY.String()
	}
	return def.String()
}

// defaultValue is a field's default in comparable and printable forms.
type defaultValue struct {
	zero      bool
	key       string
	printable string
}

func getDefault(f protoreflect.FieldDescriptor) defaultValue {
	v := f.Default()
	switch f.Kind() {
	case protoreflect.StringKind:
		s := v.String()
		return defaultValue{s == "", "s" + s, strconv.Quote(s)}
	case protoreflect.BytesKind:
		b := v.Bytes()
		hex := make([]string, len(b))
		for i, x := range b {
			hex[i] = fmt.Sprintf("%#x", x)
		}
		return defaultValue{len(b) == 0, "b" + string(b), "[" + strings.Join(hex, ",") + "]"}
	case protoreflect.BoolKind:
		return defaultValue{!v.Bool(), boolStr(v.Bool()), boolStr(v.Bool())}
	case protoreflect.EnumKind:
		n := v.Enum()
		p := strconv.Itoa(int(n))
		ev := f.DefaultEnumValue()
		if ev == nil && f.Enum() != nil {
			ev = f.Enum().Values().ByNumber(n)
		}
		if ev != nil {
			p = string(f.Enum().Name()) + "." + string(ev.Name())
		}
		return defaultValue{n == 0, "e" + strconv.Itoa(int(n)), p}
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		x := v.Float()
		if f.Kind() == protoreflect.FloatKind {
			x = float64(float32(x))
		}
		key := strconv.FormatFloat(x, 'g', -1, 64)
		if math.IsNaN(x) {
			key = "nan"
		}
		return defaultValue{x == 0 && !math.Signbit(x), "f" + key, key}
	case protoreflect.Uint32Kind, protoreflect.Uint64Kind, protoreflect.Fixed32Kind, protoreflect.Fixed64Kind:
		u := v.Uint()
		s := strconv.FormatUint(u, 10)
		return defaultValue{u == 0, "i" + s, s}
	default:
		i := v.Int()
		s := strconv.FormatInt(i, 10)
		return defaultValue{i == 0, "i" + s, s}
	}
}

func canHaveDefault(f protoreflect.FieldDescriptor) bool {
	return !f.IsList() && !f.IsMap() && f.Kind() != protoreflect.MessageKind && f.Kind() != protoreflect.GroupKind
}

func (c *checker) checkFieldPair(of, nf protoreflect.FieldDescriptor, nameFolded bool) {
	bothMapEntries := of.ContainingMessage() != nil && nf.ContainingMessage() != nil && of.ContainingMessage().IsMapEntry() && nf.ContainingMessage().IsMapEntry()
	if !bothMapEntries {
		oc, nc := getCardinality(of), getCardinality(nf)
		if oc != nc {
			c.add("FIELD_SAME_CARDINALITY", at(nf), "", "%s changed cardinality from %q to %q.", c.fieldDesc(nf), oc.String(), nc.String())
		}
		if wireCardGroup[oc] != wireCardGroup[nc] {
			c.add("FIELD_WIRE_COMPATIBLE_CARDINALITY", at(nf), "", "%s changed cardinality from %q to %q.", c.fieldDesc(nf), oc.String(), nc.String())
		}
		if wireJSONCardGroup[oc] != wireJSONCardGroup[nc] {
			c.add("FIELD_WIRE_JSON_COMPATIBLE_CARDINALITY", at(nf), "", "%s changed cardinality from %q to %q.", c.fieldDesc(nf), oc.String(), nc.String())
		}
		if c.on["FIELD_SAME_CPP_STRING_TYPE"] && isStringish(of) && isStringish(nf) {
			ot, op := cppStringType(of)
			nt, np := cppStringType(nf)
			if (ot != nt || op != np) && !(op && nt == "STRING" && !np) {
				show := func(t string, piece bool) string {
					if piece {
						return "STRING_PIECE"
					}
					return t
				}
				c.add("FIELD_SAME_CPP_STRING_TYPE", at(nf, []int32{8, 1}, nil), "", "%s changed C++ string type from %q to %q.", c.fieldDesc(nf), show(ot, op), show(nt, np))
			}
		}
	}
	if c.on["FIELD_SAME_JAVA_UTF8_VALIDATION"] && of.Kind() == protoreflect.StringKind && nf.Kind() == protoreflect.StringKind {
		if a, b := javaUTF8(of), javaUTF8(nf); a != b {
			p := at(nf.ParentFile(), []int32{8, 27})
			if p.sl == 1 && p.sc == 1 && p.el == 1 && p.ec == 1 {
				p = at(nf)
			}
			c.add("FIELD_SAME_JAVA_UTF8_VALIDATION", p, "", "%s changed Java string UTF8 validation from %q to %q.", c.fieldDesc(nf), a, b)
		}
	}
	if c.on["FIELD_SAME_UTF8_VALIDATION"] && of.Kind() == protoreflect.StringKind && nf.Kind() == protoreflect.StringKind {
		a := descriptorpb.FeatureSet_Utf8Validation(feature(of, "utf8_validation"))
		b := descriptorpb.FeatureSet_Utf8Validation(feature(nf, "utf8_validation"))
		if a != b {
			c.add("FIELD_SAME_UTF8_VALIDATION", at(nf, []int32{8, 21, 4}, nil), "", "%s changed UTF8 validation from %v to %v.", c.fieldDesc(nf), a, b)
		}
	}
	if c.on["FIELD_SAME_JSTYPE"] && is64(of) && is64(nf) {
		if a, b := fieldOpts(of).GetJstype(), fieldOpts(nf).GetJstype(); a != b {
			c.add("FIELD_SAME_JSTYPE", at(nf, []int32{8, 6}, nil), "", "%s changed option \"jstype\" from %q to %q.", c.fieldDesc(nf), a.String(), b.String())
		}
	}
	c.checkFieldTypes(of, nf)
	// Names.
	renamed := of.Name() != nf.Name()
	if !of.IsExtension() && of.JSONName() != nf.JSONName() {
		// A JSON name that follows from a rename (or renumbering) is part
		// of that one finding in plugkit's view.
		derived := renamed && !c.opts.BufCompat && (nameFolded || c.on["FIELD_SAME_NAME"]) &&
			!fieldHasJSONName(of) && !fieldHasJSONName(nf)
		if !derived {
			c.add("FIELD_SAME_JSON_NAME", at(nf, []int32{10}, nil), "", "%s changed option \"json_name\" from %q to %q.", c.fieldDesc(nf), of.JSONName(), nf.JSONName())
		}
	}
	if renamed && !nameFolded {
		on, nn := string(of.Name()), string(nf.Name())
		if of.IsExtension() {
			on, nn = string(of.FullName()), string(nf.FullName())
		}
		if c.opts.BufCompat {
			c.add("FIELD_SAME_NAME", at(nf, []int32{1}), "", "%s changed name from %q to %q.", c.fieldDescWithName(nf, ""), on, nn)
		} else {
			hint := "the binary encoding is unchanged, but generated code and the JSON name change"
			if of.JSONName() != nf.JSONName() {
				hint += fmt.Sprintf(" (%q to %q)", of.JSONName(), nf.JSONName())
			}
			hint += "; add a new field and deprecate the old one instead (Cosmos ADR-044: fields must not be renamed)"
			c.add("FIELD_SAME_NAME", at(nf, []int32{1}), hint, "%s was renamed from %q to %q.", c.fieldDescWithName(nf, ""), on, nn)
		}
	}
	if c.on["FIELD_SAME_DEFAULT"] && canHaveDefault(of) && canHaveDefault(nf) {
		a, b := getDefault(of), getDefault(nf)
		if !(a.zero && b.zero) && (a.key != b.key || of.Kind() != nf.Kind()) {
			c.add("FIELD_SAME_DEFAULT", at(nf, []int32{7}, nil), "", "%s changed default value from %v to %v.", c.fieldDesc(nf), a.printable, b.printable)
		}
	}
	if c.on["FIELD_SAME_ONEOF"] && !of.IsExtension() {
		oo, no := of.ContainingOneof(), nf.ContainingOneof()
		if oo != nil && oo.IsSynthetic() {
			oo = nil
		}
		if no != nil && no.IsSynthetic() {
			no = nil
		}
		switch {
		case oo != nil && no != nil:
			if oo.Name() != no.Name() {
				q := ""
				if c.opts.BufNames {
					q = "q" // buf v1.75 prints a stray "q" here.
				}
				c.add("FIELD_SAME_ONEOF", at(nf), "", "%s%s moved from oneof %q to oneof %q.", c.fieldDesc(nf), q, string(oo.Name()), string(no.Name()))
			}
		case oo != nil:
			c.add("FIELD_SAME_ONEOF", at(nf), "", "%s moved from inside to outside a oneof.", c.fieldDesc(nf))
		case no != nil:
			c.add("FIELD_SAME_ONEOF", at(nf), "", "%s moved from outside to inside a oneof.", c.fieldDesc(nf))
		}
	}
}

func fieldHasJSONName(f protoreflect.FieldDescriptor) bool {
	_, ok := sourceLoc(f, []int32{10})
	return ok
}

func (c *checker) checkFieldTypes(of, nf protoreflect.FieldDescriptor) {
	sameStruct := func() bool {
		return !c.opts.BufCompat && of.Message() != nil && nf.Message() != nil &&
			sameStructure(&c.lk, of.Message(), nf.Message(), map[[2]protoreflect.FullName]bool{})
	}
	if c.on["FIELD_SAME_TYPE"] {
		if of.Kind() != nf.Kind() {
			c.addChangedType("FIELD_SAME_TYPE", of, nf, "")
		} else if isRef(nf.Kind()) && typeName(of) != typeName(nf) {
			moved := false
			hint := ""
			if sameStruct() {
				// A message that moved is reported once, by MESSAGE_NO_DELETE.
				if m := c.movedTo(of.Message()); m != nil && m.FullName() == nf.Message().FullName() && c.on["MESSAGE_NO_DELETE"] {
					moved = true
				}
				hint = "the two messages have the same fields, so the binary and JSON encodings are unchanged; generated code changes"
			}
			if !moved {
				c.addChangedTypeName("FIELD_SAME_TYPE", of, nf, hint)
			}
		}
	}
	if c.on["FIELD_WIRE_COMPATIBLE_TYPE"] {
		og, ng := wireKindGroup[of.Kind()], wireKindGroup[nf.Kind()]
		if og != ng {
			switch {
			case of.Kind() == protoreflect.StringKind && nf.Kind() == protoreflect.BytesKind:
			case of.Kind() == protoreflect.BytesKind && nf.Kind() == protoreflect.StringKind:
				c.addChangedType("FIELD_WIRE_COMPATIBLE_TYPE", of, nf, "See https://developers.google.com/protocol-buffers/docs/proto3#updating for wire compatibility rules. Note that while string and bytes are compatible if the data is valid UTF-8, there is no way to enforce that a bytes field is UTF-8, so these fields may be incompatible.")
			default:
				c.addChangedType("FIELD_WIRE_COMPATIBLE_TYPE", of, nf, "See https://developers.google.com/protocol-buffers/docs/proto3#updating for wire compatibility rules.")
			}
		} else if typeName(of) != typeName(nf) {
			switch nf.Kind() {
			case protoreflect.EnumKind:
				c.checkEnumCompatible("FIELD_WIRE_COMPATIBLE_TYPE", of, nf)
			case protoreflect.MessageKind, protoreflect.GroupKind:
				if !sameStruct() {
					c.addChangedTypeName("FIELD_WIRE_COMPATIBLE_TYPE", of, nf, "")
				}
			}
		}
	}
	if c.on["FIELD_WIRE_JSON_COMPATIBLE_TYPE"] {
		og, ng := wireJSONKindGroup[of.Kind()], wireJSONKindGroup[nf.Kind()]
		if og != ng {
			c.addChangedType("FIELD_WIRE_JSON_COMPATIBLE_TYPE", of, nf, "See https://developers.google.com/protocol-buffers/docs/proto3#updating for wire compatibility rules and https://developers.google.com/protocol-buffers/docs/proto3#json for JSON compatibility rules.")
		} else if typeName(of) != typeName(nf) {
			switch nf.Kind() {
			case protoreflect.EnumKind:
				c.checkEnumCompatible("FIELD_WIRE_JSON_COMPATIBLE_TYPE", of, nf)
			case protoreflect.MessageKind, protoreflect.GroupKind:
				if !sameStruct() {
					c.addChangedTypeName("FIELD_WIRE_JSON_COMPATIBLE_TYPE", of, nf, "")
				}
			}
		}
	}
}

// checkEnumCompatible accepts an enum type change when both enums have the
// same short name and the old values are a subset of the new ones.
func (c *checker) checkEnumCompatible(rule string, of, nf protoreflect.FieldDescriptor) {
	oe, ne := of.Enum(), nf.Enum()
	if oe.Name() != ne.Name() {
		c.addChangedTypeName(rule, of, nf, "")
		return
	}
	for i := 0; i < oe.Values().Len(); i++ {
		v := oe.Values().Get(i)
		if w := c.lk.valueByName(ne, v.Name()); w == nil || w.Number() != v.Number() {
			c.addChangedTypeName(rule, of, nf, "")
			return
		}
	}
}

// tagRange is an inclusive range of numbers.
type tagRange [2]int

func fieldRanges(r protoreflect.FieldRanges) []tagRange {
	out := make([]tagRange, r.Len())
	for i := range out {
		x := r.Get(i)
		out[i] = tagRange{int(x[0]), int(x[1]) - 1}
	}
	return out
}

func enumRanges(r protoreflect.EnumRanges) []tagRange {
	out := make([]tagRange, r.Len())
	for i := range out {
		x := r.Get(i)
		out[i] = tagRange{int(x[0]), int(x[1])}
	}
	return out
}

func inFieldRanges(r protoreflect.FieldRanges, n protoreflect.FieldNumber) bool { return r.Has(n) }

const (
	messageRangeMax    = 536870911
	messageSetRangeMax = 2147483646
	enumRangeMax       = math.MaxInt32
)

func messageMax(md protoreflect.MessageDescriptor) int {
	if msgOpts(md).GetMessageSetWireFormat() {
		return messageSetRangeMax
	}
	return messageRangeMax
}

func collapse(rs []tagRange) []tagRange {
	if len(rs) == 0 {
		return nil
	}
	s := append([]tagRange(nil), rs...)
	sort.Slice(s, func(i, j int) bool {
		if s[i][0] == s[j][0] {
			return s[i][1] < s[j][1]
		}
		return s[i][0] < s[j][0]
	})
	out := []tagRange{s[0]}
	for _, r := range s[1:] {
		last := &out[len(out)-1]
		if r[0] <= last[1]+1 {
			if r[1] > last[1] {
				last[1] = r[1]
			}
			continue
		}
		out = append(out, r)
	}
	return out
}

// missing returns the parts of r not covered by the collapsed ranges.
func missing(r tagRange, collapsed []tagRange) []tagRange {
	var out []tagRange
	start := r[0]
	for _, c := range collapsed {
		if c[1] < start {
			continue
		}
		if c[0] > r[1] {
			break
		}
		if c[0] > start {
			out = append(out, tagRange{start, c[0] - 1})
		}
		start = c[1] + 1
		if start > r[1] {
			return out
		}
	}
	if start <= r[1] {
		out = append(out, tagRange{start, r[1]})
	}
	return out
}

func rangeString(r tagRange, max int) string {
	switch {
	case r[0] == r[1]:
		return fmt.Sprintf("[%d]", r[0])
	case r[1] == max:
		return fmt.Sprintf("[%d,max]", r[0])
	}
	return fmt.Sprintf("[%d,%d]", r[0], r[1])
}

func (c *checker) checkRanges(rule, kind string, d protoreflect.Descriptor, name string, old, cur []tagRange, max int) {
	if len(old) == 0 {
		return
	}
	elemKind := "message"
	if _, ok := d.(protoreflect.EnumDescriptor); ok {
		elemKind = "enum"
	}
	collapsed := collapse(cur)
	for _, r := range old {
		m := missing(r, collapsed)
		if len(m) == 0 {
			continue
		}
		parts := make([]string, len(m))
		for i, x := range m {
			parts[i] = rangeString(x, max)
		}
		c.add(rule, at(d), "", "Previously present %s range %q on %s %q is missing values: %s were removed.", kind, rangeString(r, max), elemKind, name, strings.Join(parts, ", "))
	}
}

// checkEnums runs the rules on enums paired by full name and their values
// paired by number.
func (c *checker) checkEnums() {
	for _, name := range c.old.enumOrder {
		oe := c.old.enums[name].d
		ne0, ok := c.new.enums[name]
		if !ok {
			continue
		}
		ne := ne0.d
		if oe.IsClosed() != ne.IsClosed() {
			from, to := "closed", "open"
			if ne.IsClosed() {
				from, to = to, from
			}
			c.add("ENUM_SAME_TYPE", at(ne, []int32{3, 7, 2}, nil), "", "Enum %q changed from %s to %s.", c.enumName(ne), from, to)
		}
		if c.on["ENUM_SAME_JSON_FORMAT"] {
			if a, b := jsonFormat(oe), jsonFormat(ne); a == descriptorpb.FeatureSet_ALLOW && b != descriptorpb.FeatureSet_ALLOW {
				c.add("ENUM_SAME_JSON_FORMAT", at(ne, []int32{3, 7, 6}, nil), "", "Enum %q JSON format support changed from %v to %v.", c.enumName(ne), a, b)
			}
		}
		if c.on["RESERVED_ENUM_NO_DELETE"] {
			c.checkRanges("RESERVED_ENUM_NO_DELETE", "reserved", ne, c.enumName(ne), enumRanges(oe.ReservedRanges()), enumRanges(ne.ReservedRanges()), enumRangeMax)
			for i := 0; i < oe.ReservedNames().Len(); i++ {
				n := oe.ReservedNames().Get(i)
				if !ne.ReservedNames().Has(n) {
					c.add("RESERVED_ENUM_NO_DELETE", at(ne), "", "Previously present reserved name %q on enum %q was deleted.", string(n), c.enumName(ne))
				}
			}
		}
		oldByNum, newByNum := valuesByNumber(oe), valuesByNumber(ne)
		nums := make([]int, 0, len(oldByNum))
		for n := range oldByNum {
			nums = append(nums, int(n))
		}
		sort.Ints(nums)
		for _, n := range nums {
			num := protoreflect.EnumNumber(n)
			ov := oldByNum[num]
			nv, ok := newByNum[num]
			if !ok {
				c.add("ENUM_VALUE_NO_DELETE", at(ne), "", "Previously present enum value \"%d\" on enum %q was deleted.", n, c.enumName(ne))
				if !ne.ReservedRanges().Has(num) {
					c.add("ENUM_VALUE_NO_DELETE_UNLESS_NUMBER_RESERVED", at(ne), "", "Previously present enum value \"%d\" on enum %q was deleted without reserving the number \"%d\".", n, c.enumName(ne), n)
				}
				allReserved := true
				for _, v := range ov {
					if !ne.ReservedNames().Has(v.Name()) {
						allReserved = false
					}
				}
				if !allReserved {
					s := ""
					if len(ov) > 1 {
						s = "s"
					}
					c.add("ENUM_VALUE_NO_DELETE_UNLESS_NAME_RESERVED", at(ne), "", "Previously present enum value \"%d\" on enum %q was deleted without reserving the name%s %s.", n, c.enumName(ne), s, quotedNames(ov))
				}
				continue
			}
			// Every old name must still be there.
			contained := true
			for _, v := range ov {
				found := false
				for _, w := range nv {
					if w.Name() == v.Name() {
						found = true
					}
				}
				if !found {
					contained = false
				}
			}
			if !contained {
				s := ""
				if len(ov) > 1 && len(nv) > 1 {
					s = "s"
				}
				for _, w := range nv {
					c.add("ENUM_VALUE_SAME_NAME", at(w, []int32{2}), "", "Enum value \"%d\" on enum %q changed name%s from %s to %s.", n, c.enumName(ne), s, quotedNames(ov), quotedNames(nv))
				}
			}
		}
	}
}

func valuesByNumber(ed protoreflect.EnumDescriptor) map[protoreflect.EnumNumber][]protoreflect.EnumValueDescriptor {
	m := map[protoreflect.EnumNumber][]protoreflect.EnumValueDescriptor{}
	for i := 0; i < ed.Values().Len(); i++ {
		v := ed.Values().Get(i)
		m[v.Number()] = append(m[v.Number()], v)
	}
	return m
}

func quotedNames(vs []protoreflect.EnumValueDescriptor) string {
	names := make([]string, len(vs))
	for i, v := range vs {
		names[i] = strconv.Quote(string(v.Name()))
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

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
