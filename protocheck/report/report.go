package report

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"sort"
	"strings"
)

// Severity says whether a finding fails a run.
type Severity int

const (
	// SeverityError findings are breaking changes: they fail a run.
	SeverityError Severity = iota
	// SeverityInfo findings are printed but never fail a run on their own.
	SeverityInfo
)

// String returns "error" or "info".
func (s Severity) String() string {
	if s == SeverityInfo {
		return "info"
	}
	return "error"
}

// Finding is one problem found by a rule. Lines and columns are 1-based;
// a finding about a whole file (or about something deleted without a
// surviving parent) points at 1:1.
type Finding struct {
	// Path is the file the finding is about, relative to its input root.
	// It is empty for findings about a deleted file or package.
	Path        string
	StartLine   int
	StartColumn int
	EndLine     int
	EndColumn   int
	// Type is the rule ID, e.g. "FIELD_NO_DELETE".
	Type string
	// Message is the human-readable description.
	Message string
	// Severity is SeverityInfo for informational rules.
	Severity Severity
	// Hint, when set, says what happened beyond buf's view (e.g. that a
	// deleted message was moved) or what to do.
	Hint string
}

// Failing reports whether any finding has SeverityError.
func Failing(findings []Finding) bool {
	for _, f := range findings {
		if f.Severity == SeverityError {
			return true
		}
	}
	return false
}

// Sort orders findings as buf does: by path, start line, start
// column, type and message (the end of a span does not count).
func Sort(fs []Finding) {
	sort.SliceStable(fs, func(i, j int) bool {
		a, b := fs[i], fs[j]
		switch {
		case a.Path != b.Path:
			return a.Path < b.Path
		case a.StartLine != b.StartLine:
			return a.StartLine < b.StartLine
		case a.StartColumn != b.StartColumn:
			return a.StartColumn < b.StartColumn
		case a.Type != b.Type:
			return a.Type < b.Type
		}
		return a.Message < b.Message
	})
}

// jsonFinding is the JSON form of a Finding, with buf's key order.
type jsonFinding struct {
	Path        string `json:"path,omitempty"`
	StartLine   int    `json:"start_line"`
	StartColumn int    `json:"start_column"`
	EndLine     int    `json:"end_line"`
	EndColumn   int    `json:"end_column"`
	Type        string `json:"type"`
	Message     string `json:"message"`
	Severity    string `json:"severity,omitempty"`
	Hint        string `json:"hint,omitempty"`
}

// Error formats accepted by Write.
const (
	FormatText          = "text"           // path:line:col:message
	FormatJSON          = "json"           // one JSON object a line
	FormatGitHubActions = "github-actions" // ::error workflow commands
	FormatJUnit         = "junit"          // JUnit XML, one test suite per file
)

// CheckFormat returns an error naming the accepted formats when format is
// not one of them ("" is text).
func CheckFormat(format string) error {
	switch format {
	case FormatText, "", FormatJSON, FormatGitHubActions, FormatJUnit:
		return nil
	}
	return fmt.Errorf("unknown error format %q (use text, json, github-actions or junit)", format)
}

// Write prints findings in one of the formats "text"
// (path:line:col:message, like buf), "json" (one object a line with buf's
// keys path, start_line, start_column, end_line, end_column, type, message;
// "severity" and "hint" are added only when not the default/empty) or
// "github-actions" (workflow commands, in buf's layout) or "junit" (JUnit
// XML as buf writes it: a test suite per file, named by its path without
// ".proto", a test case per finding). Findings without a
// path (deleted files and packages) show "<input>" in text and
// github-actions output, as in buf's. pathPrefix, if not empty, is joined
// before each path.
func Write(w io.Writer, format, pathPrefix string, findings []Finding) error {
	if format == FormatJUnit {
		return writeJUnit(w, pathPrefix, findings)
	}
	for _, f := range findings {
		p := f.Path
		if p != "" && pathPrefix != "" {
			p = pathPrefix + "/" + p
		}
		if p == "" && format != FormatJSON {
			p = "<input>" // as buf prints findings about deleted files
		}
		var err error
		switch format {
		case FormatText, "":
			_, err = fmt.Fprintf(w, "%s:%d:%d:%s\n", p, f.StartLine, f.StartColumn, f.Message)
			if err == nil && f.Hint != "" {
				_, err = fmt.Fprintf(w, "\thint: %s\n", f.Hint)
			}
		case FormatJSON:
			jf := jsonFinding{p, f.StartLine, f.StartColumn, f.EndLine, f.EndColumn, f.Type, f.Message, "", f.Hint}
			if f.Severity != SeverityError {
				jf.Severity = f.Severity.String()
			}
			var b []byte
			b, err = json.Marshal(jf)
			if err == nil {
				b = append(b, '\n')
				_, err = w.Write(b)
			}
		case FormatGitHubActions:
			level := "error"
			if f.Severity == SeverityInfo {
				level = "notice"
			}
			msg := f.Message
			if f.Hint != "" {
				msg += " Hint: " + f.Hint
			}
			if f.Path == "" {
				_, err = fmt.Fprintf(w, "::%s file=%s::%s\n", level, p, ghEscape(msg))
			} else {
				_, err = fmt.Fprintf(w, "::%s file=%s,line=%d,col=%d,endLine=%d,endColumn=%d::%s\n",
					level, ghEscapeProp(p), f.StartLine, f.StartColumn, f.EndLine, f.EndColumn, ghEscape(msg))
			}
		default:
			return CheckFormat(format)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func ghEscape(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

func ghEscapeProp(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}

// writeJUnit writes findings as buf's JUnit XML: a test suite per file in
// the order the files first appear (findings without a path form the suite
// "<input>"), a failing test case per finding named RULE_LINE_COLUMN (RULE
// alone without a path) whose message is the text-format line. No findings
// write nothing, as buf.
func writeJUnit(w io.Writer, pathPrefix string, findings []Finding) error {
	if len(findings) == 0 {
		return nil
	}
	type suite struct {
		name  string
		cases []string
	}
	var suites []*suite
	byName := map[string]*suite{}
	var b strings.Builder
	esc := func(s string) string {
		var e strings.Builder
		_ = xml.EscapeText(&e, []byte(s))
		return e.String()
	}
	for _, f := range findings {
		p := f.Path
		if p != "" && pathPrefix != "" {
			p = pathPrefix + "/" + p
		}
		name, caseName := "<input>", f.Type
		if p == "" {
			p = "<input>"
		} else {
			name = strings.TrimSuffix(p, ".proto")
			caseName = fmt.Sprintf("%s_%d_%d", f.Type, f.StartLine, f.StartColumn)
		}
		s := byName[name]
		if s == nil {
			s = &suite{name: name}
			byName[name] = s
			suites = append(suites, s)
		}
		line := fmt.Sprintf("%s:%d:%d:%s", p, f.StartLine, f.StartColumn, f.Message)
		s.cases = append(s.cases, fmt.Sprintf("    <testcase name=\"%s\">\n      <failure message=\"%s\" type=\"%s\"></failure>\n    </testcase>\n",
			esc(caseName), esc(line), esc(f.Type)))
	}
	b.WriteString("<testsuites>\n")
	for _, s := range suites {
		fmt.Fprintf(&b, "  <testsuite name=\"%s\" tests=\"%d\" failures=\"%d\" errors=\"0\">\n", esc(s.name), len(s.cases), len(s.cases))
		for _, c := range s.cases {
			b.WriteString(c)
		}
		b.WriteString("  </testsuite>\n")
	}
	b.WriteString("</testsuites>\n")
	_, err := io.WriteString(w, b.String())
	return err
}
