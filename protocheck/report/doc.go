// Package report is the last stage of protocheck: a finding (a rule's
// verdict about a span of a file) and the formats findings are written in,
// as buf writes them (text, json, github-actions, junit). It depends on no
// other stage, so that tools that only print or read findings need nothing
// else.
package report
