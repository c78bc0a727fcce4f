// Package ruleset is the catalogue of protocheck's rules: every rule with
// its categories and purpose, and the selection of rules from categories
// and IDs as buf.yaml's use and except (and --use, --except) name them. It
// depends on no other stage: the configuration stage (bufconfig) checks
// rule names with it, the checks (package protocheck) run what it selects.
package ruleset
