package report

import (
	"bytes"
	"strings"
	"testing"
)

// Each format writes a finding as buf does; a finding without a path is
// "<input>" (text, github-actions, junit) or has no "path" key (json).
func TestWrite(t *testing.T) {
	fs := []Finding{
		{Path: "a.proto", StartLine: 3, StartColumn: 5, EndLine: 3, EndColumn: 9, Type: "FIELD_SAME_TYPE", Message: `Field "1" changed type.`},
		{StartLine: 1, StartColumn: 1, EndLine: 1, EndColumn: 1, Type: "FILE_NO_DELETE", Message: `Previously present file "b.proto" was deleted.`},
	}
	cases := map[string]string{
		FormatText: "dir/a.proto:3:5:Field \"1\" changed type.\n<input>:1:1:Previously present file \"b.proto\" was deleted.\n",
		FormatJSON: `{"path":"dir/a.proto","start_line":3,"start_column":5,"end_line":3,"end_column":9,"type":"FIELD_SAME_TYPE","message":"Field \"1\" changed type."}` + "\n" +
			`{"start_line":1,"start_column":1,"end_line":1,"end_column":1,"type":"FILE_NO_DELETE","message":"Previously present file \"b.proto\" was deleted."}` + "\n",
		FormatGitHubActions: "::error file=dir/a.proto,line=3,col=5,endLine=3,endColumn=9::Field \"1\" changed type.\n::error file=<input>::Previously present file \"b.proto\" was deleted.\n",
		FormatJUnit: `<testsuites>
  <testsuite name="dir/a" tests="1" failures="1" errors="0">
    <testcase name="FIELD_SAME_TYPE_3_5">
      <failure message="dir/a.proto:3:5:Field &#34;1&#34; changed type." type="FIELD_SAME_TYPE"></failure>
    </testcase>
  </testsuite>
  <testsuite name="&lt;input&gt;" tests="1" failures="1" errors="0">
    <testcase name="FILE_NO_DELETE">
      <failure message="&lt;input&gt;:1:1:Previously present file &#34;b.proto&#34; was deleted." type="FILE_NO_DELETE"></failure>
    </testcase>
  </testsuite>
</testsuites>
`,
	}
	for format, want := range cases {
		var b bytes.Buffer
		if err := Write(&b, format, "dir", fs); err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		if b.String() != want {
			t.Errorf("%s:\n%s\nwant:\n%s", format, b.String(), want)
		}
	}
	var b bytes.Buffer
	if err := Write(&b, FormatJUnit, "", nil); err != nil || b.Len() != 0 {
		t.Errorf("junit without findings wrote %q, %v; buf writes nothing", b.String(), err)
	}
	if err := Write(&b, "xml", "", fs); err == nil || !strings.Contains(err.Error(), "junit") {
		t.Errorf("unknown format: %v", err)
	}
	if !Failing(fs) || Failing([]Finding{{Severity: SeverityInfo}}) {
		t.Error("Failing")
	}
}
