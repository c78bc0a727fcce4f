package main

import (
	"strings"
	"testing"

	"github.com/plugkit/plugkit/internal/testutil"
)

// TestProtoBreakingCompileErrors: in buf-compatible mode an input that does
// not compile is a COMPILE finding and exit 100, as in buf; otherwise it is
// an error on stderr and exit 1.
func TestProtoBreakingCompileErrors(t *testing.T) {
	t.Chdir(testutil.TempDir(t))
	writeProto(t, "old/a.proto", "syntax = \"proto3\";\npackage a;\nmessage M {\n  int32 x = 1;\n}\n")
	writeProto(t, "new/a.proto", "syntax = \"proto3\";\npackage a;\nmessage M {\n  int32 x = 1\n}\n")

	code, out, errs := runCLI("proto", "breaking", "new", "--against", "old", "--buf-compat", "--error-format", "json")
	if code != 100 || errs != "" || !strings.HasPrefix(out, `{"path":"new/a.proto","start_line":5,"start_column":1,"end_line":5,"end_column":1,"type":"COMPILE","message":"syntax error`) {
		t.Errorf("buf-compat json: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	code, out, _ = runCLI("proto", "breaking", "new", "--against", "old", "--buf-compat")
	if code != 100 || !strings.HasPrefix(out, "new/a.proto:5:1:syntax error") {
		t.Errorf("buf-compat text: exit %d, stdout %q", code, out)
	}
	// The against input failing is reported the same way.
	code, out, _ = runCLI("proto", "breaking", "old", "--against", "new", "--buf-compat")
	if code != 100 || !strings.HasPrefix(out, "new/a.proto:5:1:syntax error") {
		t.Errorf("against does not compile: exit %d, stdout %q", code, out)
	}
	code, out, errs = runCLI("proto", "breaking", "new", "--against", "old")
	if code != 1 || out != "" || !strings.Contains(errs, "does not compile") {
		t.Errorf("default mode: exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

// TestProtoBreakingDeprecatedRule: the deprecated buf rule is accepted with
// a warning on stderr.
func TestProtoBreakingDeprecatedRule(t *testing.T) {
	t.Chdir(testutil.TempDir(t))
	writeProto(t, "a/a.proto", "syntax = \"proto3\";\npackage a;\nmessage M {}\n")
	code, out, errs := runCLI("proto", "breaking", "a", "--against", "a", "--use", "FILE,MESSAGE_SAME_MESSAGE_SET_WIRE_FORMAT")
	if code != 0 || out != "" || !strings.Contains(errs, "warning: rule MESSAGE_SAME_MESSAGE_SET_WIRE_FORMAT is deprecated") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
}
