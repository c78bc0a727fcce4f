package protocheck

import (
	"strings"
	"testing"

	"github.com/plugkit/plugkit/protocheck/ruleset"
)

// The hint of SINCE_COMMENT_MISSING suggests --since-name only when it is
// not set, and then shows the pinned name (issue 21).
func TestSinceMissingHintWithSinceName(t *testing.T) {
	old := mustImage(t, "old", map[string]string{"a.proto": p3 + "message M {}\n"})
	cur := mustImage(t, "new", map[string]string{"a.proto": p3 + "message M {}\nmessage N {}\n"})
	for _, name := range []string{"", "demo"} {
		got, err := Breaking(old, cur, Options{Use: []string{"SINCE_COMMENT_MISSING"}, SinceName: name})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 {
			t.Fatalf("--since-name %q: got %+v, want one SINCE_COMMENT_MISSING", name, got)
		}
		suggests := strings.Contains(got[0].Hint, "--since-name")
		if suggests != (name == "") {
			t.Errorf("--since-name %q: hint %q", name, got[0].Hint)
		}
		if name != "" && !strings.Contains(got[0].Hint, "Since: demo VERSION") {
			t.Errorf("hint %q does not show the pinned name", got[0].Hint)
		}
	}
}

// A malformed cosmos_proto added_in option is quoted as written in the
// option, without the "Since: " the check puts before it (issue 21).
func TestAddedInMalformedQuotesOption(t *testing.T) {
	head := "syntax = \"proto3\";\npackage a;\nimport \"cosmos_proto/cosmos.proto\";\nmessage M {}\n"
	old := mustImage(t, "old", map[string]string{"a.proto": head, "cosmos_proto/cosmos.proto": cosmosProto})
	cur := mustImage(t, "new", map[string]string{"a.proto": head + "message O {\n  option (cosmos_proto.message_added_in) = \"cosmos sdk\";\n}\n", "cosmos_proto/cosmos.proto": cosmosProto})
	got, err := Breaking(old, cur, Options{Use: []string{"SINCE_COMMENT_MALFORMED"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("got %+v, want one SINCE_COMMENT_MALFORMED", got)
	}
	if !strings.Contains(got[0].Message, `added_in option "cosmos sdk"`) || strings.Contains(got[0].Message, `"Since: cosmos sdk"`) {
		t.Errorf("message %q does not quote the option's value", got[0].Message)
	}
}

// RESERVED_ADDED's description says what it reports: a removed field or
// value that was reserved (issue 21: it said the opposite).
func TestReservedAddedPurpose(t *testing.T) {
	r := ruleset.RuleByID("RESERVED_ADDED")
	if r == nil {
		t.Fatal("no RESERVED_ADDED rule")
	}
	if strings.Contains(r.Purpose, "not replaced") || !strings.Contains(r.Purpose, "is replaced by a reserved statement") {
		t.Errorf("RESERVED_ADDED purpose %q", r.Purpose)
	}
}
