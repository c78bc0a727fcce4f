package protocheck

import (
	"sort"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// extKey identifies an extension as buf pairs them: by the message it
// extends and its field number (its name and scope may change).
type extKey struct {
	extendee protoreflect.FullName
	number   protoreflect.FieldNumber
}

func extensionKey(xd protoreflect.FieldDescriptor) extKey {
	return extKey{xd.ContainingMessage().FullName(), xd.Number()}
}

// checkExtensions pairs extensions by extendee and field number, as buf
// does, and runs the field rules on each pair.
func (c *checker) checkExtensions() {
	byKey := make(map[extKey]protoreflect.FieldDescriptor, len(c.new.extensions))
	for _, ne := range c.new.extensions {
		byKey[extensionKey(ne.d)] = ne.d
	}
	names := make([]string, 0, len(c.old.extensions))
	for n := range c.old.extensions {
		names = append(names, string(n))
	}
	sort.Strings(names)
	for _, n := range names {
		od := c.old.extensions[protoreflect.FullName(n)].d
		if nd, ok := byKey[extensionKey(od)]; ok {
			c.checkFieldPair(od, nd, false)
		}
	}
}
