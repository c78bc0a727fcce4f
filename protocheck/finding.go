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
// per problem, as buf reports an input that does not compile
// ((*load.CompileError).Findings).
func CompileFindings(e *CompileError) []Finding { return e.Findings() }
