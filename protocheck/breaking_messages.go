package protocheck

import (
	"fmt"
	"strings"

	"github.com/bufbuild/protocompile/protoutil"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
)

// movedTo finds, for a message deleted from the new image, a message that
// only the new image has and that is structurally identical to it. A
// message without fields has the structure of every message, so for it
// the structure is no evidence: it counts as moved only to a message of
// the same name, or to one that a field which used it now uses.
func (c *checker) movedTo(old protoreflect.MessageDescriptor) protoreflect.MessageDescriptor {
	if _, still := c.new.messages[old.FullName()]; still {
		return nil
	}
	empty := old.Fields().Len() == 0
	var best protoreflect.MessageDescriptor
	for _, name := range c.new.messageOrder {
		if _, existed := c.old.messages[name]; existed {
			continue
		}
		cand := c.new.messages[name].d
		if cand.IsMapEntry() || !sameStructure(&c.lk, old, cand, map[[2]protoreflect.FullName]bool{}) {
			continue
		}
		if empty && cand.Name() != old.Name() && len(c.usersSwitched(old, cand)) == 0 {
			continue
		}
		if best == nil || (cand.Name() == old.Name() && best.Name() != old.Name()) {
			best = cand
		}
	}
	return best
}

// usersSwitched lists the fields ("pkg.Msg.field") that referred to old in
// the old image and refer to moved in the new one.
func (c *checker) usersSwitched(old, moved protoreflect.MessageDescriptor) []string {
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
	return users
}

// checkPermutation reports fields of a message pair that exchanged numbers:
// a field whose name had another number before, where the field that had
// its number before now has another number too, and whose old number is
// still in use. It returns the new numbers involved, whose pairs by number
// are then not reported as renames.
func (c *checker) checkPermutation(om, nm protoreflect.MessageDescriptor) map[protoreflect.FieldNumber]bool {
	var parts []string
	involved := map[protoreflect.FieldNumber]bool{}
	for i := 0; i < nm.Fields().Len(); i++ {
		nf := nm.Fields().Get(i)
		of := c.lk.fieldByName(om, nf.Name())
		if of == nil || of.Number() == nf.Number() || c.lk.fieldByNumber(nm, of.Number()) == nil {
			continue
		}
		prev := c.lk.fieldByNumber(om, nf.Number())
		if prev == nil {
			continue
		}
		if moved := c.lk.fieldByName(nm, prev.Name()); moved == nil || moved.Number() == prev.Number() {
			continue
		}
		involved[nf.Number()] = true
		parts = append(parts, fmt.Sprintf("%q from %d to %d", string(nf.Name()), of.Number(), nf.Number()))
	}
	if len(parts) > 0 {
		c.add("FIELD_SAME_NAME", at(nm), "exchanging field numbers changes the binary encoding: a reader of the other version decodes each of these fields as another one; keep every field's number (Cosmos ADR-044)",
			"Fields on message %q exchanged numbers: %s.", c.msgName(nm), strings.Join(parts, ", "))
	}
	return involved
}

// moveHint says which fields now refer to the moved message.
func (c *checker) moveHint(old, moved protoreflect.MessageDescriptor) string {
	users := c.usersSwitched(old, moved)
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

// feature resolves a google.protobuf.FeatureSet field for d. Files in
// proto2 or proto3 cannot set features, so theirs is the edition's default,
// computed once per edition.
func feature(d protoreflect.Descriptor, name protoreflect.Name) protoreflect.EnumNumber {
	fd := (&descriptorpb.FeatureSet{}).ProtoReflect().Descriptor().Fields().ByName(name)
	if d.ParentFile().Syntax() != protoreflect.Editions {
		key := langDefaultKey{name: "std." + name, edition: fileEdition(d)}
		if v, ok := langDefaults.Load(key); ok {
			return v.(protoreflect.EnumNumber)
		}
		v, err := protoutil.GetFeatureDefault(key.edition, fd)
		if err != nil {
			return 0
		}
		langDefaults.Store(key, v.Enum())
		return v.Enum()
	}
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
			if !c.requiredLabel(of) {
				continue
			}
			if nf := c.lk.fieldByNumber(nm, of.Number()); nf == nil || !c.requiredLabel(nf) {
				c.add("MESSAGE_SAME_REQUIRED_FIELDS", at(nm), "", "Message %q had required field \"%d\" deleted. Required fields must always be sent, so if one side does not know about the required field, this will result in a breakage.", c.msgName(om), of.Number())
			}
		}
		for i := 0; i < nm.Fields().Len(); i++ {
			nf := nm.Fields().Get(i)
			if !c.requiredLabel(nf) {
				continue
			}
			if of := c.lk.fieldByNumber(om, nf.Number()); of == nil || !c.requiredLabel(of) {
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
	// Fields that exchanged numbers (plugkit only).
	if !c.opts.BufCompat {
		for n := range c.checkPermutation(om, nm) {
			foldedName[n] = true
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

// requiredLabel reports whether a field counts as required for
// MESSAGE_SAME_REQUIRED_FIELDS. A proto2 required field and an editions
// field with field_presence LEGACY_REQUIRED are the same on the wire and
// in JSON, so plugkit treats them alike. buf v1.75 reads the label of the
// descriptor, which is never LABEL_REQUIRED in editions: in buf-compatible
// mode a required field that became LEGACY_REQUIRED is "deleted" and a new
// LEGACY_REQUIRED field is not "added", as buf reports them.
func (c *checker) requiredLabel(f protoreflect.FieldDescriptor) bool {
	if f.Cardinality() != protoreflect.Required {
		return false
	}
	return !c.opts.BufCompat || f.ParentFile().Syntax() != protoreflect.Editions
}

// Interchangeable reports whether messages a and b, of any packages, have
// the same structure on the wire and in JSON in both directions: each reads
// everything the other writes, as the moved-message rule compares them
// (same field numbers, names, JSON names, kinds and cardinalities, message
// and enum types compared the same way, recursively), and neither adds a
// field. protoc-gen-plugkit forwards an RPC from one major to the previous
// one when its request and response are interchangeable.
func Interchangeable(a, b protoreflect.MessageDescriptor) bool {
	var lk lookup
	return sameStructure(&lk, a, b, map[[2]protoreflect.FullName]bool{}) &&
		sameStructure(&lk, b, a, map[[2]protoreflect.FullName]bool{})
}
