package protocheck

import (
	"strings"
	"testing"

	"github.com/plugkit/plugkit/protocheck/report"
)

// TestRenameHintIsHonest: the rename hint claims an unchanged binary
// encoding only when number, type and cardinality are unchanged.
func TestRenameHintIsHonest(t *testing.T) {
	cases := []struct {
		name, new string
		unchanged bool
	}{
		{"same type", "int32 b = 1;", true},
		{"type changed", "string b = 1;", false},
		{"cardinality changed", "repeated int32 b = 1;", false},
		{"presence changed", "optional int32 b = 1;", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := one(p3 + "message M {\n  int32 a = 1;\n}\n")
			new := one(p3 + "message M {\n  " + tc.new + "\n}\n")
			got := findingsOf(breakingTypes(t, old, new, Options{Use: []string{"FILE"}}), "FIELD_SAME_NAME")
			if len(got) != 1 || !strings.Contains(got[0].Message, `was renamed from "a" to "b"`) {
				t.Fatalf("%+v", got)
			}
			if claims := strings.Contains(got[0].Hint, "encoding is unchanged"); claims != tc.unchanged {
				t.Errorf("hint %q: claims an unchanged encoding = %v, want %v", got[0].Hint, claims, tc.unchanged)
			}
		})
	}
}

// TestPermutationIsReportedAsOne: fields whose numbers were permuted are one
// finding that says so, not a rename per number.
func TestPermutationIsReportedAsOne(t *testing.T) {
	old := one(p3 + "message M {\n  int32 a = 1;\n  int32 b = 2;\n  int32 c = 3;\n}\n")
	new := one(p3 + "message M {\n  int32 b = 1;\n  int32 c = 2;\n  int32 a = 3;\n}\n")
	got := breakingTypes(t, old, new, Options{Use: []string{"FILE"}})
	if len(got) != 1 || got[0].Type != "FIELD_SAME_NAME" ||
		got[0].Message != `Fields on message "a.M" exchanged numbers: "b" from 2 to 1, "c" from 3 to 2, "a" from 1 to 3.` ||
		strings.Contains(got[0].Hint, "unchanged") {
		t.Errorf("%+v", got)
	}
	// buf-compatible mode keeps buf's three renames.
	buf := findingsOf(breakingTypes(t, old, new, Options{Use: []string{"FILE"}, BufCompat: true}), "FIELD_SAME_NAME")
	if len(buf) != 3 {
		t.Errorf("buf-compatible: %+v", buf)
	}
	// A rename onto a name that had another number is no permutation but
	// must not claim an unchanged encoding either.
	old = one(p3 + "message M {\n  int32 a = 1;\n  int32 b = 2;\n}\n")
	new = one(p3 + "message M {\n  int32 b = 1;\n  int32 c = 2;\n}\n")
	for _, f := range findingsOf(breakingTypes(t, old, new, Options{Use: []string{"FILE"}}), "FIELD_SAME_NAME") {
		if strings.Contains(f.Hint, "encoding is unchanged") && strings.Contains(f.Message, `to "b"`) {
			t.Errorf("rename to a name that had number 2: %+v", f)
		}
	}
}

// TestEmptyMessageMove: a deleted empty message has the structure of any
// message; it is only reported as moved with other evidence.
func TestEmptyMessageMove(t *testing.T) {
	moved := func(fs []report.Finding) string {
		for _, f := range findingsOf(fs, "MESSAGE_NO_DELETE") {
			if i := strings.Index(f.Message, "moved to "); i >= 0 {
				return f.Message[i:]
			}
		}
		return ""
	}
	old := one(p3 + "message Empty {}\nmessage M { int32 x = 1; }\n")
	new := one(p3 + "message M { int32 x = 1; }\nmessage Other {}\n")
	got := breakingTypes(t, old, new, Options{Use: []string{"FILE"}})
	if m := moved(got); m != "" || len(findingsOf(got, "MESSAGE_NO_DELETE")) != 1 {
		t.Errorf("unrelated empty message: %q in %+v", m, got)
	}
	// Same name, nested elsewhere: a move.
	new = one(p3 + "message M {\n  int32 x = 1;\n  message Empty {}\n}\n")
	if m := moved(breakingTypes(t, old, new, Options{Use: []string{"FILE"}})); !strings.HasPrefix(m, `moved to "a.M.Empty"`) {
		t.Errorf("same name: %q", m)
	}
	// A field that used it now uses the other one: a move.
	old = one(p3 + "message Empty {}\nmessage U { Empty e = 1; }\n")
	new = one(p3 + "message Other {}\nmessage U { Other e = 1; }\n")
	if m := moved(breakingTypes(t, old, new, Options{Use: []string{"FILE"}})); !strings.HasPrefix(m, `moved to "a.Other"`) {
		t.Errorf("field switched: %q", m)
	}
}

// TestMoveTargetBufNames: with BufNames the move target is named like the
// moved message, by its nested name.
func TestMoveTargetBufNames(t *testing.T) {
	old := one(p3 + "message Caps { bool x = 1; }\nmessage R {\n  Caps caps = 1;\n}\n")
	new := one(p3 + "message R {\n  message Caps { bool x = 1; }\n  Caps caps = 1;\n}\n")
	got := findingsOf(breakingTypes(t, old, new, Options{Use: []string{"FILE"}, BufNames: true}), "MESSAGE_NO_DELETE")
	if len(got) != 1 || !strings.Contains(got[0].Message, `message "Caps" was deleted from file: it moved to "R.Caps"`) {
		t.Errorf("%+v", got)
	}
	got = findingsOf(breakingTypes(t, old, new, Options{Use: []string{"FILE"}}), "MESSAGE_NO_DELETE")
	if len(got) != 1 || !strings.Contains(got[0].Message, `message "a.Caps" was deleted from file: it moved to "a.R.Caps"`) {
		t.Errorf("full names: %+v", got)
	}
}
