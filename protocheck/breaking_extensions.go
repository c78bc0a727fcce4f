package protocheck

import (
	"sort"

	"google.golang.org/protobuf/reflect/protoreflect"
)

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
