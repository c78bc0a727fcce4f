package protocheck

import (
	"fmt"
	"strconv"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/plugkit/plugkit/protocheck/load"
	"github.com/plugkit/plugkit/protocheck/report"
	"github.com/plugkit/plugkit/protocheck/ruleset"
)

// Options configures Breaking. The zero value checks FILE and ADR044 rules
// with plugkit's improvements over buf switched on.
type Options struct {
	// Use lists categories and rule IDs to check; empty means
	// ruleset.DefaultUse (FILE and ADR044).
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
	// ExcludeImports leaves the files the inputs import (and their
	// packages) out of the comparison, as buf's --exclude-imports: with
	// BufCompat, an import that is no longer imported is then not reported
	// as deleted.
	ExcludeImports bool
}

// Breaking compares new against old and returns the findings of the
// enabled rules, sorted as buf sorts them. It returns an error only for an
// unknown rule or category in opts.
func Breaking(old, new *load.Image, opts Options) ([]report.Finding, error) {
	on, err := ruleset.SelectRules(opts.Use, opts.Except)
	if err != nil {
		return nil, err
	}
	if opts.ExcludeImports {
		old, new = old.WithoutImports(), new.WithoutImports()
	}
	c := &checker{old: newIndex(old), new: newIndex(new), opts: opts, on: on}
	c.run()
	new.BufColumns(c.out)
	report.Sort(c.out)
	return c.out, nil
}

// elem is one named element of an image with the file that declares it.
type elem[D protoreflect.Descriptor] struct {
	d    D
	file *load.File
}

// index gives by-name access to the elements of an image.
type index struct {
	img        *load.Image
	messages   map[protoreflect.FullName]elem[protoreflect.MessageDescriptor]
	enums      map[protoreflect.FullName]elem[protoreflect.EnumDescriptor]
	services   map[protoreflect.FullName]elem[protoreflect.ServiceDescriptor]
	extensions map[protoreflect.FullName]elem[protoreflect.FieldDescriptor]
	packages   map[string][]*load.File
	// importPackages holds the imported files (not the input's own) by
	// package, each list sorted by path (buf counts them in
	// FILE_NO_DELETE and PACKAGE_NO_DELETE).
	importPackages map[string][]protoreflect.FileDescriptor
	// order keeps declaration order for deterministic walks.
	messageOrder []protoreflect.FullName
	enumOrder    []protoreflect.FullName
	serviceOrder []protoreflect.FullName
}

func newIndex(img *load.Image) *index {
	x := &index{
		img:            img,
		messages:       map[protoreflect.FullName]elem[protoreflect.MessageDescriptor]{},
		enums:          map[protoreflect.FullName]elem[protoreflect.EnumDescriptor]{},
		services:       map[protoreflect.FullName]elem[protoreflect.ServiceDescriptor]{},
		extensions:     map[protoreflect.FullName]elem[protoreflect.FieldDescriptor]{},
		packages:       map[string][]*load.File{},
		importPackages: map[string][]protoreflect.FileDescriptor{},
	}
	for _, fd := range img.Imports() {
		pkg := string(fd.Package())
		x.importPackages[pkg] = append(x.importPackages[pkg], fd)
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
	out      []report.Finding
	lk       lookup
}

// pos is a resolved source span.
type pos struct {
	path           string
	sl, sc, el, ec int
	hasPath        bool
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
	// Synthetic map entries and their fields have no source of their own:
	// they are written as the map<K, V> type of the field that uses the
	// entry.
	var entry protoreflect.MessageDescriptor
	switch x := d.(type) {
	case protoreflect.FieldDescriptor:
		if !x.IsExtension() && x.ContainingMessage().IsMapEntry() {
			entry = x.ContainingMessage()
		}
	case protoreflect.MessageDescriptor:
		if x.IsMapEntry() {
			entry = x
		}
	}
	if entry != nil {
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
	sev := report.SeverityError
	if r := ruleset.RuleByID(rule); r != nil && r.Info {
		sev = report.SeverityInfo
	}
	c.out = append(c.out, report.Finding{
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
