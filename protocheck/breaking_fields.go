package protocheck

import (
	"fmt"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
)

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

func fieldOpts(f protoreflect.FieldDescriptor) *descriptorpb.FieldOptions {
	o, _ := f.Options().(*descriptorpb.FieldOptions)
	if o == nil {
		o = &descriptorpb.FieldOptions{}
	}
	return o
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
				c.add("FIELD_SAME_CPP_STRING_TYPE", at(nf, []int32{8, 1}, langFeaturePath(false, "string_type"), nil), "", "%s changed C++ string type from %q to %q.", c.fieldDesc(nf), show(ot, op), show(nt, np))
			}
		}
	}
	if c.on["FIELD_SAME_JAVA_UTF8_VALIDATION"] && of.Kind() == protoreflect.StringKind && nf.Kind() == protoreflect.StringKind {
		if a, b := javaUTF8(of), javaUTF8(nf); a != b {
			p := at(nf.ParentFile(), []int32{8, 27})
			if p.sl == 1 && p.sc == 1 && p.el == 1 && p.ec == 1 {
				p = at(nf, langFeaturePath(true, "utf8_validation"), nil)
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
	renamed := of.Name() != nf.Name() || (of.IsExtension() && of.FullName() != nf.FullName())
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
			hint := c.renameHint(of, nf)
			hint += "; add a new field and deprecate the old one instead (Cosmos ADR-044: fields must not be renamed)"
			c.add("FIELD_SAME_NAME", at(nf, []int32{1}), hint, "%s was renamed from %q to %q.", c.fieldDescWithName(nf, ""), on, nn)
		}
	}
	if c.on["FIELD_SAME_DEFAULT"] && canHaveDefault(of) && canHaveDefault(nf) {
		a, b := getDefault(of), getDefault(nf)
		if !(a.zero && b.zero) && !sameDefault(a, b) {
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

// renameHint says what a rename changes. It claims an unchanged binary
// encoding only when the number (paired by it), the type and the
// cardinality are unchanged and the new name did not belong to another
// number before.
func (c *checker) renameHint(of, nf protoreflect.FieldDescriptor) string {
	var h string
	var before protoreflect.FieldDescriptor
	if !of.IsExtension() {
		if b := c.lk.fieldByName(of.ContainingMessage(), nf.Name()); b != nil && b.Number() != nf.Number() {
			before = b
		}
	}
	switch {
	case before != nil:
		h = fmt.Sprintf("%q had number %d before, so each version reads the other's %q as a different field; generated code and the JSON name change", string(nf.Name()), before.Number(), string(nf.Name()))
	case of.Kind() != nf.Kind() || typeName(of) != typeName(nf) || getCardinality(of) != getCardinality(nf):
		h = "the field's type or cardinality changed too (reported on its own), so its binary encoding changes as well as generated code and the JSON name"
	default:
		h = "the binary encoding is unchanged, but generated code and the JSON name change"
	}
	if !of.IsExtension() && of.JSONName() != nf.JSONName() {
		h += fmt.Sprintf(" (%q to %q)", of.JSONName(), nf.JSONName())
	}
	return h
}
