package protocheck

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/plugkit/plugkit/protocheck/load"
)

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
			c.add("FILE_SAME_SYNTAX", at(nfd, []int32{12}, []int32{14}), "", "File syntax changed from %q to %q.", a, b)
		}
		if a, b := string(ofd.Package()), string(nfd.Package()); a != b {
			c.add("FILE_SAME_PACKAGE", at(nfd, []int32{2}), "", "File package changed from %q to %q.", a, b)
		}
		c.checkFileDeletions(of, nf)
	}
	if c.opts.BufCompat {
		// buf also pairs the files the inputs import.
		var gone []string
		for _, fd := range c.old.img.Imports() {
			if p := fd.Path(); c.new.img.File(p) == nil && c.new.img.Import(p) == nil {
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
func deletedAt(nf *load.File, msgs map[string]protoreflect.MessageDescriptor, nested string) pos {
	parts := strings.Split(nested, ".")
	for i := len(parts) - 1; i > 0; i-- {
		if md, ok := msgs[strings.Join(parts[:i], ".")]; ok {
			return at(md)
		}
	}
	return atFile(nf.Path)
}

func (c *checker) checkFileDeletions(of, nf *load.File) {
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
				msg = fmt.Sprintf("Previously present message %q was deleted from file: it moved to %q, which has the same fields (and maybe more).", c.deletedName(md), c.deletedName(moved))
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
		fds := make([]protoreflect.FileDescriptor, 0, len(x.packages[pkg]))
		for _, f := range x.packages[pkg] {
			fds = append(fds, f.Desc)
		}
		if c.opts.BufCompat {
			// buf's image holds the imported files too.
			fds = append(fds, x.importPackages[pkg]...)
		}
		for _, fd := range fds {
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
		if !ok && c.opts.BufCompat && len(c.new.importPackages[pkg]) > 0 {
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
		// A deleted nested message is reported at its nearest enclosing
		// message that is still in the package, wherever that moved, as
		// long as the old file still exists.
		whereMessage := func(oldFile string, nested string) pos {
			if c.new.img.File(oldFile) == nil {
				return atFile("")
			}
			parts := strings.Split(nested, ".")
			for i := len(parts) - 1; i > 0; i-- {
				name := strings.Join(parts[:i], ".")
				if pkg != "" {
					name = pkg + "." + name
				}
				if e, ok := c.new.messages[protoreflect.FullName(name)]; ok {
					return at(e.d)
				}
			}
			return atFile(oldFile)
		}
		if c.on["PACKAGE_MESSAGE_NO_DELETE"] && pairs("message") {
			for _, name := range c.old.messageOrder {
				e := c.old.messages[name]
				if string(e.d.ParentFile().Package()) != pkg {
					continue
				}
				if _, ok := c.new.messages[name]; !ok {
					c.add("PACKAGE_MESSAGE_NO_DELETE", whereMessage(e.file.Path, nestedName(e.d)), "", "Previously present message %q was deleted from package %q.", c.deletedName(e.d), pkg)
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
		if c.opts.BufCompat {
			c.checkImportedPackageElements(pkg, pairs)
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

// checkImportedPackageElements reports, as buf does, the messages, enums
// and extensions of package pkg that an imported file of the old input
// declared and that neither the new input nor its imports declare any
// more: an import the new input no longer has takes them out of the
// package. pairs says whether the new package still has elements of a
// kind (buf compares a kind only then).
func (c *checker) checkImportedPackageElements(pkg string, pairs func(kind string) bool) {
	type decl struct {
		kind string
		d    protoreflect.Descriptor
	}
	collect := func(fds []protoreflect.FileDescriptor, fn func(decl)) {
		for _, fd := range fds {
			walkFile(fd, func(md protoreflect.MessageDescriptor) { fn(decl{"message", md}) },
				func(ed protoreflect.EnumDescriptor) { fn(decl{"enum", ed}) },
				func(xd protoreflect.FieldDescriptor) { fn(decl{"extension", xd}) })
		}
	}
	now := map[protoreflect.FullName]bool{}
	var own []protoreflect.FileDescriptor
	for _, f := range c.new.packages[pkg] {
		own = append(own, f.Desc)
	}
	collect(append(own, c.new.importPackages[pkg]...), func(d decl) { now[d.d.FullName()] = true })
	rules := map[string]string{"message": "PACKAGE_MESSAGE_NO_DELETE", "enum": "PACKAGE_ENUM_NO_DELETE", "extension": "PACKAGE_EXTENSION_NO_DELETE"}
	collect(c.old.importPackages[pkg], func(d decl) {
		rule := rules[d.kind]
		if !c.on[rule] || now[d.d.FullName()] || !pairs(d.kind) {
			return
		}
		c.add(rule, atFile(""), "", "Previously present %s %q was deleted from package %q.", d.kind, c.deletedName(d.d), pkg)
	})
}
