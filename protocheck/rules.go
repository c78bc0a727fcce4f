package protocheck

import "github.com/plugkit/plugkit/protocheck/ruleset"

// Rule describes one check (ruleset.Rule).
type Rule = ruleset.Rule

// Rule categories (see package ruleset).
const (
	CategoryFILE     = ruleset.CategoryFILE
	CategoryPACKAGE  = ruleset.CategoryPACKAGE
	CategoryWIREJSON = ruleset.CategoryWIREJSON
	CategoryWIRE     = ruleset.CategoryWIRE
	CategoryCSR      = ruleset.CategoryCSR
	CategoryADR044   = ruleset.CategoryADR044
	CategoryPROTOCOL = ruleset.CategoryPROTOCOL
)

var (
	// Rules lists every rule (ruleset.Rules).
	Rules = ruleset.Rules
	// Categories lists the known category names (ruleset.Categories).
	Categories = ruleset.Categories
	// DefaultUse is the rule selection used when Options.Use is empty.
	DefaultUse = ruleset.DefaultUse
	// DeprecatedRules are rule IDs buf still accepts but no longer checks.
	DeprecatedRules = ruleset.DeprecatedRules
)

// RuleByID returns the rule with the given ID, or nil.
func RuleByID(id string) *Rule { return ruleset.RuleByID(id) }

// SelectRules resolves use and except into the set of enabled rule IDs
// (ruleset.SelectRules).
func SelectRules(use, except []string) (map[string]bool, error) {
	return ruleset.SelectRules(use, except)
}

// DeprecationWarnings returns a warning for each deprecated rule ID named
// in use or except (ruleset.DeprecationWarnings).
func DeprecationWarnings(use, except []string) []string {
	return ruleset.DeprecationWarnings(use, except)
}
