package protocheck

import (
	"errors"
	"fmt"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Since is a parsed ADR-044 Since line: "Since: cosmos-sdk 0.47, 0.46.3"
// gives Name "cosmos-sdk" and Versions ["0.47", "0.46.3"].
type Since struct {
	Name     string
	Versions []string
}

// String formats s as a Since line.
func (s Since) String() string {
	return "Since: " + s.Name + " " + strings.Join(s.Versions, ", ")
}

// ErrNotSince is returned by ParseSince for text that is not a Since line
// at all (as opposed to a malformed one).
var ErrNotSince = errors.New("not a Since line")

// IsSinceLine reports whether a comment line is meant as a Since line, as
// opposed to prose that happens to start with the word "since" ("since last
// report time, or cumulative changes since a fixed start time.", "Since
// containerd v2.0, the timestamps are set to zero"). After trimming (and a
// leading "*" of a block comment), the line must start with "since" in any
// case and either be just that word, or go on with a colon ("Since:",
// "since :"), or be nothing but an optional project name and versions such
// as 0.47, v1.2.3 or 5.4-rc1 ("Since cosmos-sdk v0.44", "since 0.47,
// 0.46.3."). A sentence that goes on after the version is prose.
func IsSinceLine(line string) bool {
	return isSinceAttempt(line, "")
}

// isSinceAttempt is IsSinceLine that also takes a line whose only word
// after "since" is the project name pinned by --since-name.
func isSinceAttempt(line, name string) bool {
	line = strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(line), "*"))
	if len(line) < 5 || !strings.EqualFold(line[:5], "since") {
		return false
	}
	rest := line[5:]
	if rest == "" {
		return true
	}
	if rest[0] != ':' && rest[0] != ' ' && rest[0] != '\t' {
		return false // "Sincerely"
	}
	rest = strings.TrimSpace(rest)
	if strings.HasPrefix(rest, ":") {
		return true
	}
	words := strings.Fields(rest)
	named := false
	if !versionLike(words[0]) {
		// The first word may be a project name; what follows must then be
		// versions only.
		named = true
		words = words[1:]
	}
	if len(words) == 0 {
		return named && name != "" && strings.EqualFold(strings.TrimRight(rest, ",:;."), name)
	}
	for _, w := range words {
		if !versionLike(w) {
			return false
		}
	}
	return true
}

// versionLike reports whether a word looks like a version: an optional
// "v", then digits, a dot and more digits, whatever follows (0.47, v1.2.3,
// 5.4-rc1, "0.46.3,").
func versionLike(w string) bool {
	w = strings.TrimPrefix(strings.TrimPrefix(w, "v"), "V")
	i := 0
	for i < len(w) && w[i] >= '0' && w[i] <= '9' {
		i++
	}
	if i == 0 || i+1 >= len(w) || w[i] != '.' {
		return false
	}
	return w[i+1] >= '0' && w[i+1] <= '9'
}

// ParseSince parses one comment line in the exact ADR-044 form
// "Since: NAME VERSION{, VERSION}" where NAME has no spaces or commas and
// each VERSION is MAJOR.MINOR or MAJOR.MINOR.PATCH (digits, optionally
// followed by a -prerelease). Leading and trailing spaces (and a leading "*"
// of a block comment) are ignored. Lines that are not Since lines at all
// give ErrNotSince; other errors say what is wrong.
func ParseSince(line string) (Since, error) {
	return parseSince(line, false, "")
}

// parseSince is ParseSince; allowV accepts a "v" before versions (as in
// cosmos_proto options) and name is the project pinned by --since-name.
func parseSince(line string, allowV bool, name string) (Since, error) {
	if !isSinceAttempt(line, name) {
		return Since{}, ErrNotSince
	}
	line = strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(line), "*"))
	rest, ok := strings.CutPrefix(line, "Since: ")
	if !ok {
		return Since{}, errors.New(`must start with "Since: " (capital S, colon, one space)`)
	}
	name, versions, ok := strings.Cut(rest, " ")
	if !ok || name == "" {
		return Since{}, errors.New("must name the project, then a space and a version")
	}
	if strings.ContainsAny(name, ",\t") {
		return Since{}, fmt.Errorf("project name %q must not contain commas or tabs", name)
	}
	s := Since{Name: name}
	for _, v := range strings.Split(versions, ", ") {
		if allowV {
			v = strings.TrimPrefix(v, "v")
		}
		if !validVersion(v) {
			return Since{}, fmt.Errorf("%q is not a version like 0.47 or 0.46.3 (separate versions with \", \")", v)
		}
		s.Versions = append(s.Versions, v)
	}
	return s, nil
}

// validVersion accepts MAJOR.MINOR[.PATCH][-PRERELEASE].
func validVersion(v string) bool {
	core, pre, hasPre := strings.Cut(v, "-")
	if hasPre {
		if pre == "" {
			return false
		}
		for _, r := range pre {
			if !(r == '.' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
				return false
			}
		}
	}
	parts := strings.Split(core, ".")
	if len(parts) < 2 || len(parts) > 3 {
		return false
	}
	for _, p := range parts {
		if p == "" {
			return false
		}
		for _, r := range p {
			if r < '0' || r > '9' {
				return false
			}
		}
	}
	return true
}

// cosmos_proto extension numbers for "added in" options.
const (
	cosmosMethodAddedIn  = 93001 // google.protobuf.MethodOptions
	cosmosMessageAddedIn = 93002 // google.protobuf.MessageOptions
	cosmosFieldAddedIn   = 93003 // google.protobuf.FieldOptions
	cosmosFileAddedIn    = 793023
)

// addedInOption returns the string value of a cosmos_proto *_added_in option
// on d, if the option is set.
func addedInOption(d protoreflect.Descriptor) (string, bool) {
	var num protowire.Number
	switch d.(type) {
	case protoreflect.MethodDescriptor:
		num = cosmosMethodAddedIn
	case protoreflect.MessageDescriptor:
		num = cosmosMessageAddedIn
	case protoreflect.FieldDescriptor:
		num = cosmosFieldAddedIn
	case protoreflect.FileDescriptor:
		num = cosmosFileAddedIn
	default:
		return "", false
	}
	opts := d.Options()
	if opts == nil {
		return "", false
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(opts)
	if err != nil {
		return "", false
	}
	val, found := "", false
	for len(b) > 0 {
		n, typ, l := protowire.ConsumeTag(b)
		if l < 0 {
			return "", false
		}
		b = b[l:]
		if n == num && typ == protowire.BytesType {
			v, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return "", false
			}
			val, found = string(v), true
			b = b[m:]
			continue
		}
		m := protowire.ConsumeFieldValue(n, typ, b)
		if m < 0 {
			return "", false
		}
		b = b[m:]
	}
	return val, found
}

// sinceInfo is what an element says about when it was added.
type sinceInfo struct {
	lines     []string // Since-like comment lines
	option    string
	hasOption bool
}

// commentSinceLines returns the comment lines of loc that are meant as Since
// lines (see IsSinceLine); name is the project pinned by --since-name.
func commentSinceLines(loc protoreflect.SourceLocation, detached bool, name string) []string {
	var out []string
	texts := []string{loc.LeadingComments, loc.TrailingComments}
	if detached {
		texts = append(texts, loc.LeadingDetachedComments...)
	}
	for _, text := range texts {
		for _, line := range strings.Split(text, "\n") {
			if isSinceAttempt(line, name) {
				out = append(out, strings.TrimSpace(line))
			}
		}
	}
	return out
}

func getSince(d protoreflect.Descriptor, name string) sinceInfo {
	var si sinceInfo
	if fd, ok := d.(protoreflect.FileDescriptor); ok {
		// A file-level Since sits in the comments of the syntax or package
		// statement.
		for _, p := range [][]int32{{12}, {2}, {14}} {
			if loc, ok := sourceLoc(fd, p); ok {
				si.lines = append(si.lines, commentSinceLines(loc, true, name)...)
			}
		}
	} else if loc, ok := sourceLoc(d, nil); ok {
		si.lines = commentSinceLines(loc, false, name)
	}
	si.option, si.hasOption = addedInOption(d)
	return si
}

// describe names an element for ADR044 messages.
func (c *checker) describe(d protoreflect.Descriptor) string {
	switch d := d.(type) {
	case protoreflect.FileDescriptor:
		return fmt.Sprintf("File %q", d.Path())
	case protoreflect.MessageDescriptor:
		return fmt.Sprintf("Message %q", c.msgName(d))
	case protoreflect.FieldDescriptor:
		return c.fieldDesc(d)
	case protoreflect.EnumDescriptor:
		return fmt.Sprintf("Enum %q", c.enumName(d))
	case protoreflect.EnumValueDescriptor:
		return fmt.Sprintf("Enum value %q on enum %q", string(d.Name()), c.enumName(d.Parent().(protoreflect.EnumDescriptor)))
	case protoreflect.ServiceDescriptor:
		return fmt.Sprintf("Service %q", c.serviceName(d))
	case protoreflect.MethodDescriptor:
		return fmt.Sprintf("RPC %q on service %q", string(d.Name()), c.serviceName(d.Parent().(protoreflect.ServiceDescriptor)))
	}
	return string(d.FullName())
}

func (c *checker) sinceExample() string {
	name := c.opts.SinceName
	if name == "" {
		name = "NAME"
	}
	return "// Since: " + name + " VERSION"
}

// missingHint is the hint of SINCE_COMMENT_MISSING: it suggests
// --since-name only when the name is not pinned yet.
func (c *checker) missingHint() string {
	const h = "ADR-044 asks every addition to say from which version it exists"
	if c.opts.SinceName != "" {
		return h + " (" + c.sinceExample() + ")"
	}
	return h + "; set --since-name to pin the project name"
}

// validateSince reports malformed lines of an element (those not already
// present on its old counterpart) and says whether a valid Since exists.
func (c *checker) validateSince(d protoreflect.Descriptor, si sinceInfo, oldLines map[string]bool, p pos) bool {
	valid := false
	// check parses text; shown is what the finding quotes (the option's
	// own value for an added_in option, which has no "Since: ").
	check := func(text, shown string, allowV bool, what string) {
		s, err := parseSince(text, allowV, c.opts.SinceName)
		if err == nil && c.opts.SinceName != "" && s.Name != c.opts.SinceName {
			err = fmt.Errorf("names project %q, expected %q", s.Name, c.opts.SinceName)
		}
		if err == nil {
			valid = true
			return
		}
		if oldLines[text] {
			return
		}
		c.add("SINCE_COMMENT_MALFORMED", p, "write \"Since: NAME VERSION{, VERSION}\", e.g. \"Since: cosmos-sdk 0.47, 0.46.3\"",
			"%s has a malformed %s %q: %v.", c.describe(d), what, shown, err)
	}
	for _, line := range si.lines {
		check(line, line, false, "Since line")
	}
	if si.hasOption {
		check("Since: "+si.option, si.option, true, "added_in option")
	}
	return valid
}

// checkADR044 runs the ADR044 category. Files of a package that the old
// image did not have need no Since lines (a new package is a new major
// version, and the package change is a finding of its own); their Since
// lines, if any, must still be well-formed.
func (c *checker) checkADR044() {
	for _, nf := range c.new.img.Files {
		of := c.old.img.File(nf.Path)
		_, oldPkg := c.old.packages[string(nf.Desc.Package())]
		covered := !oldPkg
		if of == nil {
			si := getSince(nf.Desc, c.opts.SinceName)
			if c.validateSince(nf.Desc, si, nil, at(nf.Desc, []int32{2}, []int32{12})) {
				covered = true
			}
		}
		c.adrFile(nf.Desc, covered)
	}
	c.checkReservedAdded()
	c.checkDeprecatedAdded()
}

func oldSinceLines(d protoreflect.Descriptor, name string) map[string]bool {
	if d == nil {
		return nil
	}
	m := map[string]bool{}
	si := getSince(d, name)
	for _, l := range si.lines {
		m[l] = true
	}
	if si.hasOption {
		m["Since: "+si.option] = true
	}
	return m
}

// requireSince checks one new-side element. old is its counterpart or nil
// when it was added. It returns whether the element's contents are covered
// by a Since of their own.
func (c *checker) requireSince(d, old protoreflect.Descriptor, covered bool) bool {
	si := getSince(d, c.opts.SinceName)
	p := at(d)
	valid := c.validateSince(d, si, oldSinceLines(old, c.opts.SinceName), p)
	if old != nil {
		// The element existed: additions inside it need their own Since
		// unless an enclosing addition covers them.
		return covered
	}
	if covered {
		return true
	}
	if !valid && len(si.lines) == 0 && !si.hasOption {
		c.add("SINCE_COMMENT_MISSING", p, c.missingHint(),
			"%s was added without a %q comment.", c.describe(d), c.sinceExample())
	}
	return true
}

func (c *checker) adrFile(fd protoreflect.FileDescriptor, covered bool) {
	for i := 0; i < fd.Messages().Len(); i++ {
		c.adrMessage(fd.Messages().Get(i), covered)
	}
	for i := 0; i < fd.Enums().Len(); i++ {
		c.adrEnum(fd.Enums().Get(i), covered)
	}
	for i := 0; i < fd.Services().Len(); i++ {
		sd := fd.Services().Get(i)
		var old protoreflect.ServiceDescriptor
		if e, ok := c.old.services[sd.FullName()]; ok {
			old = e.d
		}
		cov := c.requireSince(sd, descOrNil(old), covered)
		for j := 0; j < sd.Methods().Len(); j++ {
			m := sd.Methods().Get(j)
			var om protoreflect.Descriptor
			if old != nil {
				if x := old.Methods().ByName(m.Name()); x != nil {
					om = x
				}
			}
			c.requireSince(m, om, cov)
		}
	}
}

// descOrNil turns a typed nil into an untyped nil interface.
func descOrNil[D protoreflect.Descriptor](d D) protoreflect.Descriptor {
	var zero D
	if any(d) == any(zero) {
		return nil
	}
	return d
}

func (c *checker) adrMessage(md protoreflect.MessageDescriptor, covered bool) {
	if md.IsMapEntry() {
		return
	}
	var old protoreflect.MessageDescriptor
	if e, ok := c.old.messages[md.FullName()]; ok {
		old = e.d
	}
	cov := c.requireSince(md, descOrNil(old), covered)
	for i := 0; i < md.Fields().Len(); i++ {
		f := md.Fields().Get(i)
		var of protoreflect.Descriptor
		if old != nil {
			if x := c.lk.fieldByNumber(old, f.Number()); x != nil {
				of = x
			}
		}
		c.requireSince(f, of, cov)
	}
	for i := 0; i < md.Messages().Len(); i++ {
		c.adrMessage(md.Messages().Get(i), cov)
	}
	for i := 0; i < md.Enums().Len(); i++ {
		c.adrEnum(md.Enums().Get(i), cov)
	}
}

func (c *checker) adrEnum(ed protoreflect.EnumDescriptor, covered bool) {
	var old protoreflect.EnumDescriptor
	if e, ok := c.old.enums[ed.FullName()]; ok {
		old = e.d
	}
	cov := c.requireSince(ed, descOrNil(old), covered)
	for i := 0; i < ed.Values().Len(); i++ {
		v := ed.Values().Get(i)
		var ov protoreflect.Descriptor
		if old != nil {
			if x := c.lk.valueByName(old, v.Name()); x != nil {
				ov = x
			} else if x := c.lk.valueByNumber(old, v.Number()); x != nil {
				ov = x
			}
		}
		c.requireSince(v, ov, cov)
	}
}

// checkReservedAdded finds removed fields and values whose number or name
// became reserved.
func (c *checker) checkReservedAdded() {
	if !c.on["RESERVED_ADDED"] {
		return
	}
	const hint = "reserving a removed field hides it from clients that still set it (cosmos-sdk issue 9446); keep the field and mark it deprecated instead"
	for _, name := range c.old.messageOrder {
		om := c.old.messages[name].d
		ne, ok := c.new.messages[name]
		if !ok {
			continue
		}
		nm := ne.d
		for i := 0; i < om.Fields().Len(); i++ {
			f := om.Fields().Get(i)
			if c.lk.fieldByNumber(nm, f.Number()) != nil {
				continue
			}
			num := nm.ReservedRanges().Has(f.Number()) && !om.ReservedRanges().Has(f.Number())
			nam := nm.ReservedNames().Has(f.Name()) && !om.ReservedNames().Has(f.Name())
			if num || nam {
				c.add("RESERVED_ADDED", at(nm), hint, "%s was removed and reserved.", c.fieldDesc(f))
			}
		}
	}
	for _, name := range c.old.enumOrder {
		oe := c.old.enums[name].d
		ne0, ok := c.new.enums[name]
		if !ok {
			continue
		}
		ne := ne0.d
		for i := 0; i < oe.Values().Len(); i++ {
			v := oe.Values().Get(i)
			if c.lk.valueByNumber(ne, v.Number()) != nil {
				continue
			}
			num := ne.ReservedRanges().Has(v.Number()) && !oe.ReservedRanges().Has(v.Number())
			nam := ne.ReservedNames().Has(v.Name()) && !oe.ReservedNames().Has(v.Name())
			if num || nam {
				c.add("RESERVED_ADDED", at(ne), hint, "Enum value %q (%d) on enum %q was removed and reserved.", string(v.Name()), v.Number(), c.enumName(ne))
			}
		}
	}
}

// deprecatedPath is the source path of the "deprecated" option per kind.
func deprecatedPath(d protoreflect.Descriptor) []int32 {
	switch d.(type) {
	case protoreflect.FieldDescriptor:
		return []int32{8, 3}
	case protoreflect.MessageDescriptor:
		return []int32{7, 3}
	case protoreflect.EnumDescriptor:
		return []int32{3, 3}
	case protoreflect.EnumValueDescriptor:
		return []int32{3, 1}
	case protoreflect.ServiceDescriptor:
		return []int32{3, 33}
	case protoreflect.MethodDescriptor:
		return []int32{4, 33}
	case protoreflect.FileDescriptor:
		return []int32{8, 23}
	}
	return nil
}

func isDeprecated(d protoreflect.Descriptor) bool {
	type dep interface{ GetDeprecated() bool }
	if o, ok := d.Options().(dep); ok {
		return o.GetDeprecated()
	}
	return false
}

// checkDeprecatedAdded notes elements that became deprecated.
func (c *checker) checkDeprecatedAdded() {
	if !c.on["DEPRECATED_ADDED"] {
		return
	}
	note := func(old, cur protoreflect.Descriptor) {
		if !isDeprecated(old) && isDeprecated(cur) {
			c.add("DEPRECATED_ADDED", at(cur, deprecatedPath(cur), nil), "ADR-044 allows this; servers may reject or ignore the element in a later version", "%s was marked deprecated.", c.describe(cur))
		}
	}
	for _, nf := range c.new.img.Files {
		if of := c.old.img.File(nf.Path); of != nil {
			note(of.Desc, nf.Desc)
		}
	}
	for _, name := range c.old.messageOrder {
		om := c.old.messages[name].d
		ne, ok := c.new.messages[name]
		if !ok || om.IsMapEntry() {
			continue
		}
		note(om, ne.d)
		for i := 0; i < om.Fields().Len(); i++ {
			f := om.Fields().Get(i)
			if nf := c.lk.fieldByNumber(ne.d, f.Number()); nf != nil {
				note(f, nf)
			}
		}
	}
	for _, name := range c.old.enumOrder {
		oe := c.old.enums[name].d
		ne, ok := c.new.enums[name]
		if !ok {
			continue
		}
		note(oe, ne.d)
		for i := 0; i < oe.Values().Len(); i++ {
			v := oe.Values().Get(i)
			if nv := c.lk.valueByName(ne.d, v.Name()); nv != nil {
				note(v, nv)
			}
		}
	}
	for _, name := range c.old.serviceOrder {
		os := c.old.services[name].d
		ns, ok := c.new.services[name]
		if !ok {
			continue
		}
		note(os, ns.d)
		for i := 0; i < os.Methods().Len(); i++ {
			m := os.Methods().Get(i)
			if nm := ns.d.Methods().ByName(m.Name()); nm != nil {
				note(m, nm)
			}
		}
	}
}
