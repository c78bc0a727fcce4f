package protocheck

import (
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// TestInterchangeable compares messages of two packages both ways: the
// same fields are interchangeable, a field added on either side, a renamed
// field or a changed nested message is not.
func TestInterchangeable(t *testing.T) {
	img := mustImage(t, "img", map[string]string{
		"a.proto": "syntax = \"proto3\";\npackage a;\nmessage In { string key = 1; }\nmessage M { In in = 1; repeated int64 n = 2; }\n" +
			"message Added { string key = 1; int64 ttl = 2; }\nmessage Renamed { string name = 1; }\nmessage Nested { In in = 1; }\n",
		"b.proto": "syntax = \"proto3\";\npackage b;\nmessage In { string key = 1; }\nmessage M { In in = 1; repeated int64 n = 2; }\n" +
			"message Added { string key = 1; }\nmessage Renamed { string key = 1; }\nmessage Other { int32 key = 1; }\nmessage Nested { Other in = 1; }\n",
	})
	msg := func(file, name string) protoreflect.MessageDescriptor {
		for _, f := range img.Files {
			if f.Path == file {
				return f.Desc.Messages().ByName(protoreflect.Name(name))
			}
		}
		t.Fatalf("no %s", file)
		return nil
	}
	for _, tc := range []struct {
		name string
		want bool
	}{{"M", true}, {"In", true}, {"Added", false}, {"Renamed", false}, {"Nested", false}} {
		a, b := msg("a.proto", tc.name), msg("b.proto", tc.name)
		if got := Interchangeable(a, b); got != tc.want {
			t.Errorf("Interchangeable(a.%s, b.%s) = %v, want %v", tc.name, tc.name, got, tc.want)
		}
		if got := Interchangeable(b, a); got != tc.want {
			t.Errorf("Interchangeable(b.%s, a.%s) = %v, want %v", tc.name, tc.name, got, tc.want)
		}
	}
}
