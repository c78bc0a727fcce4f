package protocheck

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/plugkit/plugkit/protocheck/report"
	"github.com/plugkit/plugkit/protocheck/ruleset"
)

func TestParseSince(t *testing.T) {
	valid := map[string]Since{
		"Since: cosmos-sdk 0.44":            {"cosmos-sdk", []string{"0.44"}},
		"Since: cosmos-sdk 0.42.11, 0.44.5": {"cosmos-sdk", []string{"0.42.11", "0.44.5"}},
		" * Since: tfplugin 5.4-rc1 ":       {"tfplugin", []string{"5.4-rc1"}},
	}
	for in, want := range valid {
		got, err := ParseSince(in)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("ParseSince(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	// The invalid examples of ADR-044, and a few more.
	for _, in := range []string{
		"Since cosmos-sdk v0.44",
		"since: cosmos-sdk 0.44",
		"Since: cosmos-sdk 0.42.11 0.44.5",
		"Since: Cosmos SDK 0.42.11, 0.44.5",
		"Since: cosmos-sdk",
		"Since:  cosmos-sdk 0.44",
		"Since: cosmos-sdk 1",
		"Since: cosmos-sdk 0.44,0.45",
	} {
		if _, err := ParseSince(in); err == nil || errors.Is(err, ErrNotSince) {
			t.Errorf("ParseSince(%q) = %v, want a malformed-line error", in, err)
		}
	}
	for _, in := range []string{"Sincerely yours", "This field is new.", "",
		"since last report time, or cumulative changes since a fixed start time.",
		"Since the start of 2019 we count twice.", "since 2019", "since demo mode was removed",
		"Since containerd v2.0, the whiteout timestamps are set to zero (1970-01-01),", "since v1.2 the field is ignored"} {
		if _, err := ParseSince(in); !errors.Is(err, ErrNotSince) {
			t.Errorf("ParseSince(%q) = %v, want ErrNotSince", in, err)
		}
	}
}

func FuzzParseSince(f *testing.F) {
	for _, s := range []string{"Since: cosmos-sdk 0.44", "Since: a 1.2, 3.4.5", "since: x", "Since: a 1.2-rc.1", "Since:", "*Since: q 0.1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		s, err := ParseSince(line)
		if err != nil {
			return
		}
		// A parsed line prints back to an equivalent line.
		again, err := ParseSince(s.String())
		if err != nil || !reflect.DeepEqual(again, s) {
			t.Fatalf("ParseSince(%q) = %v; reparsing %q gives %v, %v", line, s, s.String(), again, err)
		}
		if s.Name == "" || len(s.Versions) == 0 || strings.ContainsAny(s.Name, " ,") {
			t.Fatalf("ParseSince(%q) accepted %+v", line, s)
		}
	})
}

// adrCase is one ADR044 scenario with the rule IDs expected (in order).
type adrCase struct {
	name      string
	old, new  string
	sinceName string
	want      []string
}

var adrCases = []adrCase{
	{name: "missing/field", old: p3 + "message M {\n  int32 a = 1;\n}\n",
		new: p3 + "message M {\n  int32 a = 1;\n  int32 b = 2;\n}\n", want: []string{"SINCE_COMMENT_MISSING"}},
	{name: "present/field", old: p3 + "message M {\n  int32 a = 1;\n}\n",
		new: p3 + "message M {\n  int32 a = 1;\n  // The b.\n  // Since: demo 1.1\n  int32 b = 2;\n}\n"},
	{name: "present/trailing", old: p3 + "message M {\n  int32 a = 1;\n}\n",
		new: p3 + "message M {\n  int32 a = 1;\n  int32 b = 2; // Since: demo 1.1, 1.0.3\n}\n"},
	{name: "missing/all kinds", old: p3 + "message M {}\nenum E { E_UNSPECIFIED = 0; }\nservice S { rpc R(M) returns (M); }\n",
		new: p3 + "message M {}\nmessage N { int32 x = 1; }\nenum E { E_UNSPECIFIED = 0; E_A = 1; }\nenum F { F_UNSPECIFIED = 0; }\nservice S { rpc R(M) returns (M); rpc Q(M) returns (M); }\nservice T {}\n",
		// N, E_A, F, Q and T; N's field is covered by N's finding.
		want: []string{"SINCE_COMMENT_MISSING", "SINCE_COMMENT_MISSING", "SINCE_COMMENT_MISSING", "SINCE_COMMENT_MISSING", "SINCE_COMMENT_MISSING"}},
	{name: "missing/file of an existing package without file-level Since", old: p3,
		new: p3 + "message M { int32 x = 1; }\n", want: []string{"SINCE_COMMENT_MISSING"}},
	// A package the old input did not have is a new major version: its
	// elements need no Since lines (issue 10, default mode point 4).
	{name: "covered/new package", old: p3 + "message M {}\n",
		new: "syntax = \"proto3\";\npackage a.v2;\nmessage M {}\nmessage N {\n  int32 x = 1;\n}\nenum E { E_UNSPECIFIED = 0; }\nservice S { rpc R(M) returns (N); }\n"},
	{name: "malformed/new package still checks its Since lines", old: p3 + "message M {}\n",
		new: "syntax = \"proto3\";\npackage a.v2;\n// since: demo v2.0\nmessage M {}\n", want: []string{"SINCE_COMMENT_MALFORMED"}},
	// Prose that starts with "since" is not an attempt at the tag (issue
	// 10, default mode point 2).
	{name: "prose/since in a wrapped sentence", old: p3 + "message M {}\n",
		new: p3 + "message M {}\n// Since: demo 1.1\nmessage Report {\n  // Counts are either deltas\n  // since last report time, or cumulative changes since a fixed start time.\n  int64 count = 1;\n}\n"},
	{name: "prose/added field with prose only", old: p3 + "message M {}\n",
		new: p3 + "message M {\n  // The window start; counted\n  // since the process started.\n  int64 start = 1;\n}\n", want: []string{"SINCE_COMMENT_MISSING"}},
	{name: "malformed/since with a version but no colon", old: p3 + "message M {}\n",
		new: p3 + "message M {}\n// since v1.1\nmessage N {}\n", want: []string{"SINCE_COMMENT_MALFORMED"}},
	{name: "malformed/since with the pinned name but no version", old: p3 + "message M {}\n", sinceName: "demo",
		new: p3 + "message M {}\n// Since demo\nmessage N {}\n", want: []string{"SINCE_COMMENT_MALFORMED"}},
	{name: "prose/since a version, then a sentence", old: p3 + "message M {}\n",
		new: p3 + "message M {}\n// Since: demo 1.1\nmessage N {\n  // Since containerd v2.0, the whiteout timestamps are set to zero (1970-01-01),\n  // not kept.\n  int32 x = 1;\n}\n"},
	{name: "malformed/since a name and versions only", old: p3 + "message M {}\n",
		new: p3 + "message M {}\n// Since containerd v2.0, v1.7.\nmessage N {}\n", want: []string{"SINCE_COMMENT_MALFORMED"}},
	{name: "prose/name not pinned", old: p3 + "message M {}\n",
		new: p3 + "message M {}\n// Since: demo 1.1\n// since demo mode was removed, this is empty.\nmessage N {}\n"},
	{name: "covered/new message covers its fields", old: p3 + "message M {}\n",
		new: p3 + "message M {}\n// Since: demo 1.1\nmessage N {\n  int32 x = 1;\n  message O { int32 y = 1; }\n}\n"},
	{name: "covered/new file", old: p3 + "message M {}\n",
		new: p3 + "message M {}\n"},
	{name: "malformed", old: p3 + "message M {}\n",
		new: p3 + "message M {}\n// since: demo v1.1\nmessage N {}\n", want: []string{"SINCE_COMMENT_MALFORMED"}},
	{name: "malformed/pinned name", old: p3 + "message M {}\n", sinceName: "demo",
		new: p3 + "message M {}\n// Since: other 1.1\nmessage N {}\n", want: []string{"SINCE_COMMENT_MALFORMED"}},
	{name: "malformed/old lines are not reported again", old: p3 + "// since: demo v1.0\nmessage M {}\n",
		new: p3 + "// since: demo v1.0\nmessage M {}\n"},
	{name: "cosmos option", old: "syntax = \"proto3\";\npackage a;\nimport \"cosmos_proto/cosmos.proto\";\nmessage M {}\n",
		new:  "syntax = \"proto3\";\npackage a;\nimport \"cosmos_proto/cosmos.proto\";\nmessage M {}\nmessage N {\n  option (cosmos_proto.message_added_in) = \"cosmos-sdk 0.50\";\n  string x = 1;\n}\nmessage O {\n  option (cosmos_proto.message_added_in) = \"cosmos sdk\";\n}\n",
		want: []string{"SINCE_COMMENT_MALFORMED"}},
	{name: "reserved added/field", old: p3 + "message M {\n  int32 a = 1;\n  int32 b = 2;\n}\n",
		new: p3 + "message M {\n  int32 a = 1;\n  reserved 2;\n}\n", want: []string{"RESERVED_ADDED"}},
	{name: "reserved added/value", old: p3 + "enum E {\n  E_UNSPECIFIED = 0;\n  E_A = 1;\n}\n",
		new: p3 + "enum E {\n  E_UNSPECIFIED = 0;\n  reserved \"E_A\";\n}\n", want: []string{"RESERVED_ADDED"}},
	{name: "reserved kept", old: p3 + "message M {\n  int32 a = 1;\n  reserved 2;\n}\n",
		new: p3 + "message M {\n  int32 a = 1;\n  reserved 2;\n}\n"},
	{name: "deprecated added", old: p3 + "message M {\n  int32 a = 1;\n}\n",
		new: p3 + "message M {\n  int32 a = 1 [deprecated = true];\n}\n", want: []string{"DEPRECATED_ADDED"}},
	{name: "deprecated kept", old: p3 + "message M {\n  int32 a = 1 [deprecated = true];\n}\n",
		new: p3 + "message M {\n  int32 a = 1 [deprecated = true];\n}\n"},
}

const cosmosProto = `syntax = "proto3";
package cosmos_proto;
import "google/protobuf/descriptor.proto";
extend google.protobuf.MethodOptions { string method_added_in = 93001; }
extend google.protobuf.MessageOptions { string message_added_in = 93002; }
extend google.protobuf.FieldOptions { string field_added_in = 93003; }
`

func TestADR044(t *testing.T) {
	for _, c := range adrCases {
		t.Run(c.name, func(t *testing.T) {
			files := func(src string) map[string]string {
				m := map[string]string{"a.proto": src}
				if strings.Contains(src, "cosmos_proto") {
					m["cosmos_proto/cosmos.proto"] = cosmosProto
				}
				return m
			}
			old := mustImage(t, "old", files(c.old))
			if c.name == "covered/new file" {
				old = mustImage(t, "old", map[string]string{"z.proto": "syntax = \"proto3\";\npackage z;\n"})
				c.new = "// Since: demo 1.2\n" + c.new
			}
			got, err := Breaking(old, mustImage(t, "new", files(c.new)), Options{Use: []string{ruleset.CategoryADR044}, SinceName: c.sinceName})
			if err != nil {
				t.Fatal(err)
			}
			var types []string
			for _, f := range got {
				types = append(types, f.Type)
				if f.Message == "" || f.StartLine < 1 {
					t.Errorf("bad finding %+v", f)
				}
				if (f.Type == "DEPRECATED_ADDED") != (f.Severity == report.SeverityInfo) {
					t.Errorf("severity of %+v", f)
				}
			}
			if !reflect.DeepEqual(types, c.want) {
				t.Errorf("got %v, want %v\n%+v", types, c.want, got)
			}
			if c.name == "deprecated added" && report.Failing(got) {
				t.Error("DEPRECATED_ADDED alone must not fail the run")
			}
		})
	}
}
