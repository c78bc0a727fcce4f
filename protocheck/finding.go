package protocheck

import (
	"io"

	"github.com/plugkit/plugkit/protocheck/report"
)

// Finding is one problem found by a rule (report.Finding).
type Finding = report.Finding

// Severity says whether a finding fails a run (report.Severity).
type Severity = report.Severity

// Severities of findings.
const (
	// SeverityError findings are breaking changes: they fail a run.
	SeverityError = report.SeverityError
	// SeverityInfo findings are printed but never fail a run on their own.
	SeverityInfo = report.SeverityInfo
)

// Error formats accepted by WriteFindings (see package report).
const (
	FormatText          = report.FormatText
	FormatJSON          = report.FormatJSON
	FormatGitHubActions = report.FormatGitHubActions
	FormatJUnit         = report.FormatJUnit
)

// Failing reports whether any finding has SeverityError (report.Failing).
func Failing(findings []Finding) bool { return report.Failing(findings) }

// SortFindings orders findings as buf does (report.Sort).
func SortFindings(fs []Finding) { report.Sort(fs) }

// WriteFindings prints findings in a format (report.Write).
func WriteFindings(w io.Writer, format, pathPrefix string, findings []Finding) error {
	return report.Write(w, format, pathPrefix, findings)
}

// CompileFindings turns a CompileError into findings of type COMPILE, one
// per problem, as buf reports an input that does not compile: at the
// position of the problem (an unresolved import spans its import
// statement, other problems start and end at the same point), with the
// compiler's message. A problem without a position has no path and points
// at 0:0. Paths are as the error shows them (the input directory
// included), so print them with an empty path prefix.
func CompileFindings(e *CompileError) []Finding {
	out := make([]Finding, 0, len(e.Problems))
	for _, p := range e.Problems {
		out = append(out, Finding{Path: p.Path, StartLine: p.StartLine, StartColumn: p.StartColumn,
			EndLine: p.EndLine, EndColumn: p.EndColumn, Type: "COMPILE", Message: p.Message})
	}
	SortFindings(out)
	return out
}
