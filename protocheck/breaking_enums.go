package protocheck

import (
	"sort"
	"strconv"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
)

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
