package protocheck

import (
	"fmt"
	"math"
	"math/big"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// defaultValue is a field's default value for FIELD_SAME_DEFAULT: the
// value itself (a string for string and bytes fields, else a number, bool
// or enum number) and how buf prints it.
type defaultValue struct {
	// text is set for string and bytes fields.
	text *string
	// num is the value of other fields; it holds a bool, int32, int64,
	// uint32, uint64, float32 or float64.
	num       any
	zero      bool
	printable string
}

// getDefault returns f's default, explicit or implied.
func getDefault(f protoreflect.FieldDescriptor) defaultValue {
	v := f.Default()
	switch f.Kind() {
	case protoreflect.BytesKind:
		b := v.Bytes()
		hex := make([]string, len(b))
		for i, x := range b {
			hex[i] = fmt.Sprintf("0x%X", x)
		}
		t := string(b)
		return defaultValue{text: &t, zero: len(b) == 0, printable: "[" + strings.Join(hex, ",") + "]"}
	case protoreflect.StringKind:
		t := v.String()
		return defaultValue{text: &t, zero: t == "", printable: fmt.Sprintf("%q", t)}
	case protoreflect.EnumKind:
		n := v.Enum()
		p := fmt.Sprintf("%d", n)
		if e := f.Enum(); e != nil {
			if ev := e.Values().ByNumber(n); ev != nil {
				p = string(e.Name()) + "." + string(ev.Name())
			} else {
				p = fmt.Sprintf("%s.%d(?)", e.Name(), n)
			}
		}
		return defaultValue{num: int32(n), zero: n == 0, printable: p}
	}
	x := v.Interface()
	zero := false
	switch y := x.(type) {
	case bool:
		zero = !y
	case int32:
		zero = y == 0
	case int64:
		zero = y == 0
	case uint32:
		zero = y == 0
	case uint64:
		zero = y == 0
	case float32:
		zero = math.Float32bits(y) == 0 // -0 is a default of its own
	case float64:
		zero = math.Float64bits(y) == 0
	}
	return defaultValue{num: x, zero: zero, printable: fmt.Sprint(x)}
}

// sameDefault compares defaults across type changes, which
// FIELD_SAME_TYPE reports on its own: string and bytes defaults compare
// as text, everything else (bool, enum and numbers) as numbers, so that
// true equals 1 and int32 123 equals double 123. A float default compared
// with a double one is compared in float precision. Text never equals a
// number.
func sameDefault(a, b defaultValue) bool {
	if a.text != nil || b.text != nil {
		return a.text != nil && b.text != nil && *a.text == *b.text
	}
	if f, ok := a.num.(float32); ok {
		if g, ok := b.num.(float64); ok {
			return sameFloat32(f, float32(g), math.IsNaN(g))
		}
	}
	if f, ok := a.num.(float64); ok {
		if g, ok := b.num.(float32); ok {
			return sameFloat32(float32(f), g, math.IsNaN(f))
		}
	}
	x, xNaN := bigNumber(a.num)
	y, yNaN := bigNumber(b.num)
	if xNaN || yNaN {
		return xNaN && yNaN
	}
	if x == nil || y == nil {
		return a.num == b.num
	}
	return x.Cmp(y) == 0
}

func sameFloat32(f, g float32, gNaN bool) bool {
	fNaN := f != f
	if fNaN || gNaN {
		return fNaN && gNaN
	}
	return f == g
}

// bigNumber converts a default to an exact number; isNaN reports NaN.
func bigNumber(v any) (n *big.Float, isNaN bool) {
	switch x := v.(type) {
	case bool:
		if x {
			return big.NewFloat(1), false
		}
		return big.NewFloat(0), false
	case int32:
		return new(big.Float).SetInt64(int64(x)), false
	case int64:
		return new(big.Float).SetInt64(x), false
	case uint32:
		return new(big.Float).SetUint64(uint64(x)), false
	case uint64:
		return new(big.Float).SetUint64(x), false
	case float32:
		if math.IsNaN(float64(x)) {
			return nil, true
		}
		return big.NewFloat(float64(x)), false
	case float64:
		if math.IsNaN(x) {
			return nil, true
		}
		return big.NewFloat(x), false
	}
	return nil, false
}

// canHaveDefault reports whether a field can declare a default: singular
// and not a message.
func canHaveDefault(f protoreflect.FieldDescriptor) bool {
	return !f.IsList() && !f.IsMap() && f.Message() == nil
}
