package protocheck

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"
)

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
