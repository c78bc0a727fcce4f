package protocheck

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/plugkit/plugkit/protocheck/load"
	"github.com/plugkit/plugkit/protocheck/report"
	"github.com/plugkit/plugkit/protocheck/ruleset"
)

// findingsOf keeps the findings of one rule.
func findingsOf(fs []report.Finding, rule string) []report.Finding {
	var out []report.Finding
	for _, f := range fs {
		if f.Type == rule {
			out = append(out, f)
		}
	}
	return out
}

// TestParityExtensionsPairedByNumber: buf pairs extensions by extendee and
// number, so a renamed extension is a FIELD_SAME_NAME and a type change of
// an extension is a wire break.
func TestParityExtensionsPairedByNumber(t *testing.T) {
	old := one(p2 + "message M { extensions 10 to 20; }\nextend M { optional int32 a = 10; }\n")
	new := one(p2 + "message M { extensions 10 to 20; }\nmessage N {\n  extend M { optional sint32 b = 10; }\n}\n")
	buf := breakingTypes(t, old, new, Options{Use: []string{"FILE"}, BufCompat: true, BufNames: true})
	name := findingsOf(buf, "FIELD_SAME_NAME")
	if len(name) != 1 || name[0].Message != `Extension "10" on message "a.M" changed name from "a.a" to "a.N.b".` || name[0].StartLine != 5 || name[0].StartColumn != 30 {
		t.Errorf("FIELD_SAME_NAME: %+v", name)
	}
	if typ := findingsOf(buf, "FIELD_SAME_TYPE"); len(typ) != 1 || !strings.Contains(typ[0].Message, `changed type from "int32" to "sint32"`) {
		t.Errorf("FIELD_SAME_TYPE: %+v", typ)
	}
	for _, compat := range []bool{true, false} {
		wire := breakingTypes(t, old, new, Options{Use: []string{"WIRE"}, BufCompat: compat})
		if w := findingsOf(wire, "FIELD_WIRE_COMPATIBLE_TYPE"); len(w) != 1 {
			t.Errorf("WIRE (buf-compat %v): want the int32 to sint32 break, got %+v", compat, wire)
		}
	}
}

// TestParityEditionsFeatures: the C++ string type and Java UTF-8 checks read
// the editions features, including values inherited from a file option.
func TestParityEditionsFeatures(t *testing.T) {
	cpp := "edition = \"2023\";\npackage a;\nimport \"google/protobuf/cpp_features.proto\";\n"
	old := one(cpp + "message M {\n  string s = 1 [features.(pb.cpp).string_type = VIEW];\n  string t = 2;\n}\n")
	new := one(cpp + "message M {\n  string s = 1 [features.(pb.cpp).string_type = CORD];\n  string t = 2 [ctype = CORD];\n}\n")
	got := findingsOf(breakingTypes(t, old, new, Options{Use: []string{"FILE"}, BufCompat: true, BufNames: true}), "FIELD_SAME_CPP_STRING_TYPE")
	if len(got) != 2 ||
		got[0].Message != `Field "1" with name "s" on message "M" changed C++ string type from "VIEW" to "CORD".` || got[0].StartLine != 5 || got[0].StartColumn != 17 ||
		got[1].Message != `Field "2" with name "t" on message "M" changed C++ string type from "STRING" to "CORD".` {
		t.Errorf("FIELD_SAME_CPP_STRING_TYPE: %+v", got)
	}

	java := "edition = \"2023\";\npackage a;\nimport \"google/protobuf/java_features.proto\";\n"
	old = one(java + "option features.utf8_validation = NONE;\noption features.(pb.java).utf8_validation = VERIFY;\nmessage M {\n  string s = 1;\n}\n")
	new = one(java + "option features.utf8_validation = NONE;\nmessage M {\n  string s = 1;\n}\n")
	got = findingsOf(breakingTypes(t, old, new, Options{Use: []string{"FILE"}, BufCompat: true, BufNames: true}), "FIELD_SAME_JAVA_UTF8_VALIDATION")
	if len(got) != 1 || got[0].Message != `Field "1" with name "s" on message "M" changed Java string UTF8 validation from "VERIFY" to "NONE".` {
		t.Errorf("(pb.java).utf8_validation inherited from the file: %+v", got)
	}
	// The same value set on the field instead of the file is no change.
	same := one(java + "option features.utf8_validation = NONE;\nmessage M {\n  string s = 1 [features.(pb.java).utf8_validation = VERIFY];\n}\n")
	if got := findingsOf(breakingTypes(t, old, same, Options{Use: []string{"FILE"}, BufCompat: true}), "FIELD_SAME_JAVA_UTF8_VALIDATION"); len(got) != 0 {
		t.Errorf("VERIFY from the file, then from the field: %+v", got)
	}
}

// TestParityLegacyRequired: a proto2 required field that becomes an
// editions LEGACY_REQUIRED field is unchanged on the wire; buf reports the
// required field as deleted, plugkit's default mode reports nothing.
func TestParityLegacyRequired(t *testing.T) {
	old := map[string]string{"a.proto": p2 + "message M {\n  required int64 x = 1;\n}\n"}
	new := map[string]string{"a.proto": ed + "message M {\n  int64 x = 1 [features.field_presence = LEGACY_REQUIRED];\n}\n"}
	buf := findingsOf(breakingTypes(t, old, new, Options{Use: []string{"WIRE"}, BufCompat: true, BufNames: true}), "MESSAGE_SAME_REQUIRED_FIELDS")
	if len(buf) != 1 || !strings.Contains(buf[0].Message, `Message "M" had required field "1" deleted.`) {
		t.Errorf("buf-compatible: %+v", buf)
	}
	if got := findingsOf(breakingTypes(t, old, new, Options{Use: []string{"WIRE"}}), "MESSAGE_SAME_REQUIRED_FIELDS"); len(got) != 0 {
		t.Errorf("plugkit: %+v", got)
	}
	// A new LEGACY_REQUIRED field is a new required field for plugkit.
	added := map[string]string{"a.proto": ed + "message M {\n  int64 x = 1 [features.field_presence = LEGACY_REQUIRED];\n  int64 y = 2 [features.field_presence = LEGACY_REQUIRED];\n}\n"}
	if got := findingsOf(breakingTypes(t, new, added, Options{Use: []string{"WIRE"}}), "MESSAGE_SAME_REQUIRED_FIELDS"); len(got) != 1 || !strings.Contains(got[0].Message, `required field "2" added`) {
		t.Errorf("plugkit, LEGACY_REQUIRED added: %+v", got)
	}
}

// TestParityDefaults: equal defaults across type changes are no change, and
// defaults print as buf prints them.
func TestParityDefaults(t *testing.T) {
	old := one(p2 + "message M {\n  optional int32 a = 1 [default = 123];\n  optional bool b = 2 [default = true];\n  optional string c = 3 [default = \"abc\"];\n  optional bytes d = 4 [default = \"xyz\"];\n  optional float e = 5;\n  optional double f = 6 [default = 0.1];\n}\n")
	new := one(p2 + "message M {\n  optional int64 a = 1 [default = 123];\n  optional int32 b = 2 [default = 1];\n  optional bytes c = 3 [default = \"abc\"];\n  optional bytes d = 4 [default = \"abc\"];\n  optional float e = 5 [default = 123.123];\n  optional float f = 6 [default = 0.1];\n}\n")
	for _, compat := range []bool{true, false} {
		got := findingsOf(breakingTypes(t, old, new, Options{Use: []string{"FILE"}, BufCompat: compat, BufNames: true}), "FIELD_SAME_DEFAULT")
		var msgs []string
		for _, f := range got {
			msgs = append(msgs, f.Message)
		}
		want := []string{
			`Field "4" with name "d" on message "M" changed default value from [0x78,0x79,0x7A] to [0x61,0x62,0x63].`,
			`Field "5" with name "e" on message "M" changed default value from 0 to 123.123.`,
		}
		if strings.Join(msgs, "\n") != strings.Join(want, "\n") {
			t.Errorf("buf-compat %v:\n%s\nwant\n%s", compat, strings.Join(msgs, "\n"), strings.Join(want, "\n"))
		}
	}
	if got := breakingTypes(t, old, new, Options{Use: []string{"WIRE"}, BufCompat: true}); len(findingsOf(got, "FIELD_SAME_DEFAULT")) != 2 {
		t.Errorf("WIRE: %+v", got)
	}
}

// TestSortFindingsLikeBuf: buf orders by path, start line, start column,
// type and message; the end of a span does not count.
func TestSortFindingsLikeBuf(t *testing.T) {
	fs := []report.Finding{
		{Path: "a.proto", StartLine: 3, StartColumn: 1, EndLine: 3, EndColumn: 9, Type: "FIELD_SAME_TYPE", Message: "x"},
		{Path: "a.proto", StartLine: 3, StartColumn: 1, EndLine: 5, EndColumn: 2, Type: "FIELD_NO_DELETE", Message: "y"},
		{Path: "a.proto", StartLine: 2, StartColumn: 7, EndLine: 2, EndColumn: 8, Type: "Z", Message: "z"},
		{Path: "", StartLine: 0, StartColumn: 0, Type: "FILE_NO_DELETE", Message: "w"},
	}
	report.Sort(fs)
	var got []string
	for _, f := range fs {
		got = append(got, f.Message)
	}
	if strings.Join(got, "") != "wzyx" {
		t.Errorf("order %v, want w z y x", got)
	}
}

// TestCompileFindings: an input that does not compile becomes COMPILE
// findings at the compiler's position.
func TestCompileFindings(t *testing.T) {
	_, err := load.NewImage(context.Background(), "x", map[string][]byte{"a/b.proto": []byte("syntax = \"proto3\";\nmessage A {\n  int32 x = 1\n}\n")}, load.LoadOptions{})
	var ce *load.CompileError
	if !errors.As(err, &ce) {
		t.Fatalf("want a CompileError, got %v", err)
	}
	got := ce.Findings()
	if len(got) != 1 || got[0].Path != "a/b.proto" || got[0].StartLine != 4 || got[0].StartColumn != 1 || got[0].EndLine != 4 || got[0].EndColumn != 1 ||
		got[0].Type != "COMPILE" || !strings.Contains(got[0].Message, "syntax error") || strings.HasPrefix(got[0].Message, "a/b.proto") {
		t.Errorf("%+v", got)
	}
	if !report.Failing(got) {
		t.Error("COMPILE findings must fail the run")
	}
}

// TestDeprecatedRule: buf's deprecated MESSAGE_SAME_MESSAGE_SET_WIRE_FORMAT
// is accepted, checks nothing, and draws a warning.
func TestDeprecatedRule(t *testing.T) {
	on, err := ruleset.SelectRules([]string{"FILE", "MESSAGE_SAME_MESSAGE_SET_WIRE_FORMAT"}, []string{"MESSAGE_SAME_MESSAGE_SET_WIRE_FORMAT"})
	if err != nil {
		t.Fatal(err)
	}
	if !on["FIELD_NO_DELETE"] || on["MESSAGE_SAME_MESSAGE_SET_WIRE_FORMAT"] {
		t.Errorf("selection %v", on)
	}
	w := ruleset.DeprecationWarnings([]string{"MESSAGE_SAME_MESSAGE_SET_WIRE_FORMAT"}, nil)
	if len(w) != 1 || !strings.Contains(w[0], "MESSAGE_SAME_MESSAGE_SET_WIRE_FORMAT is deprecated") {
		t.Errorf("warnings %q", w)
	}
	if w := ruleset.DeprecationWarnings([]string{"FILE"}, nil); len(w) != 0 {
		t.Errorf("warnings without a deprecated rule: %q", w)
	}
}
