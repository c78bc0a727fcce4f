package ruleset

import (
	"fmt"
	"sort"
	"strings"
)

// Rule categories. FILE, PACKAGE, WIRE_JSON and WIRE are buf's breaking
// categories with the same members; CSR is buf's extra category, kept so
// that buf configurations naming it work. ADR044 and PROTOCOL are plugkit's.
const (
	CategoryFILE     = "FILE"      // generated code keeps working (buf's default)
	CategoryPACKAGE  = "PACKAGE"   // like FILE, but elements may move between files of a package
	CategoryWIREJSON = "WIRE_JSON" // binary and JSON encodings stay compatible
	CategoryWIRE     = "WIRE"      // the binary encoding stays compatible
	CategoryCSR      = "CSR"       // buf's extra category, accepted for buf configurations
	CategoryADR044   = "ADR044"    // Cosmos ADR-044: Since lines, no reserved for removed fields
	CategoryPROTOCOL = "PROTOCOL"  // versioned protocol files (History)
)

// Rule describes one check.
type Rule struct {
	// ID is the rule's identifier, reported as Finding.Type.
	ID string
	// Categories lists the categories that include the rule.
	Categories []string
	// Default reports whether buf enables the rule by default (the FILE set).
	Default bool
	// Purpose says in a few words what the rule checks.
	Purpose string
	// Info marks informational rules: their findings are printed but never
	// make a run fail.
	Info bool
}

// Rules lists every rule, buf's breaking rules (as of buf v1.75) first.
var Rules = []Rule{
	{ID: "EXTENSION_NO_DELETE", Categories: []string{"FILE"}, Default: true, Purpose: "an extension declared in a file is still declared in that file"},
	{ID: "SERVICE_NO_DELETE", Categories: []string{"FILE"}, Default: true, Purpose: "a service declared in a file is still declared in that file"},
	{ID: "ENUM_NO_DELETE", Categories: []string{"CSR", "FILE"}, Default: true, Purpose: "an enum declared in a file is still declared in that file"},
	{ID: "FILE_NO_DELETE", Categories: []string{"CSR", "FILE"}, Default: true, Purpose: "every file still exists at the same path"},
	{ID: "MESSAGE_NO_DELETE", Categories: []string{"CSR", "FILE"}, Default: true, Purpose: "a message declared in a file is still declared in that file"},
	{ID: "ENUM_SAME_TYPE", Categories: []string{"FILE", "PACKAGE"}, Default: true, Purpose: "an enum stays open or closed"},
	{ID: "FIELD_SAME_CARDINALITY", Categories: []string{"FILE", "PACKAGE"}, Default: true, Purpose: "a field keeps its cardinality (implicit, explicit, required, repeated, map)"},
	{ID: "FIELD_SAME_CPP_STRING_TYPE", Categories: []string{"FILE", "PACKAGE"}, Default: true, Purpose: "a string or bytes field keeps its C++ string type (ctype or pb.cpp string_type)"},
	{ID: "FIELD_SAME_JAVA_UTF8_VALIDATION", Categories: []string{"FILE", "PACKAGE"}, Default: true, Purpose: "a string field keeps its Java UTF-8 checking"},
	{ID: "FIELD_SAME_JSTYPE", Categories: []string{"FILE", "PACKAGE"}, Default: true, Purpose: "a 64-bit integer field keeps its jstype option"},
	{ID: "FIELD_SAME_UTF8_VALIDATION", Categories: []string{"FILE", "PACKAGE"}, Default: true, Purpose: "a string field keeps its utf8_validation feature"},
	{ID: "FILE_SAME_CC_ENABLE_ARENAS", Categories: []string{"FILE", "PACKAGE"}, Default: true, Purpose: "file option cc_enable_arenas is unchanged"},
	{ID: "FILE_SAME_CC_GENERIC_SERVICES", Categories: []string{"FILE", "PACKAGE"}, Default: true, Purpose: "file option cc_generic_services is unchanged"},
	{ID: "FILE_SAME_CSHARP_NAMESPACE", Categories: []string{"FILE", "PACKAGE"}, Default: true, Purpose: "file option csharp_namespace is unchanged"},
	{ID: "FILE_SAME_GO_PACKAGE", Categories: []string{"FILE", "PACKAGE"}, Default: true, Purpose: "file option go_package is unchanged"},
	{ID: "FILE_SAME_JAVA_GENERIC_SERVICES", Categories: []string{"FILE", "PACKAGE"}, Default: true, Purpose: "file option java_generic_services is unchanged"},
	{ID: "FILE_SAME_JAVA_MULTIPLE_FILES", Categories: []string{"FILE", "PACKAGE"}, Default: true, Purpose: "file option java_multiple_files is unchanged"},
	{ID: "FILE_SAME_JAVA_OUTER_CLASSNAME", Categories: []string{"FILE", "PACKAGE"}, Default: true, Purpose: "file option java_outer_classname is unchanged"},
	{ID: "FILE_SAME_JAVA_PACKAGE", Categories: []string{"FILE", "PACKAGE"}, Default: true, Purpose: "file option java_package is unchanged"},
	{ID: "FILE_SAME_OBJC_CLASS_PREFIX", Categories: []string{"FILE", "PACKAGE"}, Default: true, Purpose: "file option objc_class_prefix is unchanged"},
	{ID: "FILE_SAME_OPTIMIZE_FOR", Categories: []string{"FILE", "PACKAGE"}, Default: true, Purpose: "file option optimize_for is unchanged"},
	{ID: "FILE_SAME_PHP_CLASS_PREFIX", Categories: []string{"FILE", "PACKAGE"}, Default: true, Purpose: "file option php_class_prefix is unchanged"},
	{ID: "FILE_SAME_PHP_METADATA_NAMESPACE", Categories: []string{"FILE", "PACKAGE"}, Default: true, Purpose: "file option php_metadata_namespace is unchanged"},
	{ID: "FILE_SAME_PHP_NAMESPACE", Categories: []string{"FILE", "PACKAGE"}, Default: true, Purpose: "file option php_namespace is unchanged"},
	{ID: "FILE_SAME_PY_GENERIC_SERVICES", Categories: []string{"FILE", "PACKAGE"}, Default: true, Purpose: "file option py_generic_services is unchanged"},
	{ID: "FILE_SAME_RUBY_PACKAGE", Categories: []string{"FILE", "PACKAGE"}, Default: true, Purpose: "file option ruby_package is unchanged"},
	{ID: "FILE_SAME_SWIFT_PREFIX", Categories: []string{"FILE", "PACKAGE"}, Default: true, Purpose: "file option swift_prefix is unchanged"},
	{ID: "RPC_NO_DELETE", Categories: []string{"FILE", "PACKAGE"}, Default: true, Purpose: "every RPC of a service still exists"},
	{ID: "ENUM_VALUE_NO_DELETE", Categories: []string{"CSR", "FILE", "PACKAGE"}, Default: true, Purpose: "every enum value number still exists"},
	{ID: "EXTENSION_MESSAGE_NO_DELETE", Categories: []string{"CSR", "FILE", "PACKAGE"}, Default: true, Purpose: "extension ranges of a message only grow"},
	{ID: "FIELD_NO_DELETE", Categories: []string{"CSR", "FILE", "PACKAGE"}, Default: true, Purpose: "every field number of a message still exists"},
	{ID: "FIELD_SAME_TYPE", Categories: []string{"CSR", "FILE", "PACKAGE"}, Default: true, Purpose: "a field keeps its exact type"},
	{ID: "FILE_SAME_SYNTAX", Categories: []string{"CSR", "FILE", "PACKAGE"}, Default: true, Purpose: "a file keeps its syntax"},
	{ID: "MESSAGE_NO_REMOVE_STANDARD_DESCRIPTOR_ACCESSOR", Categories: []string{"CSR", "FILE", "PACKAGE"}, Default: true, Purpose: "no_standard_descriptor_accessor is not switched on"},
	{ID: "ONEOF_NO_DELETE", Categories: []string{"CSR", "FILE", "PACKAGE"}, Default: true, Purpose: "every oneof of a message still exists"},
	{ID: "ENUM_SAME_JSON_FORMAT", Categories: []string{"CSR", "FILE", "PACKAGE", "WIRE_JSON"}, Default: true, Purpose: "an enum that supported JSON still does"},
	{ID: "ENUM_VALUE_SAME_NAME", Categories: []string{"CSR", "FILE", "PACKAGE", "WIRE_JSON"}, Default: true, Purpose: "an enum value number keeps its names"},
	{ID: "FIELD_SAME_JSON_NAME", Categories: []string{"CSR", "FILE", "PACKAGE", "WIRE_JSON"}, Default: true, Purpose: "a field keeps its JSON name"},
	{ID: "FIELD_SAME_NAME", Categories: []string{"CSR", "FILE", "PACKAGE", "WIRE_JSON"}, Default: true, Purpose: "a field number keeps its name"},
	{ID: "MESSAGE_SAME_JSON_FORMAT", Categories: []string{"CSR", "FILE", "PACKAGE", "WIRE_JSON"}, Default: true, Purpose: "a message that supported JSON still does"},
	{ID: "FIELD_SAME_DEFAULT", Categories: []string{"CSR", "FILE", "PACKAGE", "WIRE_JSON", "WIRE"}, Default: true, Purpose: "a field keeps its default value"},
	{ID: "FIELD_SAME_ONEOF", Categories: []string{"CSR", "FILE", "PACKAGE", "WIRE_JSON", "WIRE"}, Default: true, Purpose: "a field stays in (or out of) the same oneof"},
	{ID: "FILE_SAME_PACKAGE", Categories: []string{"CSR", "FILE", "PACKAGE", "WIRE_JSON", "WIRE"}, Default: true, Purpose: "a file keeps its package"},
	{ID: "MESSAGE_SAME_REQUIRED_FIELDS", Categories: []string{"CSR", "FILE", "PACKAGE", "WIRE_JSON", "WIRE"}, Default: true, Purpose: "required fields are neither added nor removed"},
	{ID: "RESERVED_ENUM_NO_DELETE", Categories: []string{"CSR", "FILE", "PACKAGE", "WIRE_JSON", "WIRE"}, Default: true, Purpose: "reserved numbers and names of an enum stay reserved"},
	{ID: "RESERVED_MESSAGE_NO_DELETE", Categories: []string{"CSR", "FILE", "PACKAGE", "WIRE_JSON", "WIRE"}, Default: true, Purpose: "reserved numbers and names of a message stay reserved"},
	{ID: "RPC_SAME_CLIENT_STREAMING", Categories: []string{"CSR", "FILE", "PACKAGE", "WIRE_JSON", "WIRE"}, Default: true, Purpose: "an RPC keeps its client streaming"},
	{ID: "RPC_SAME_IDEMPOTENCY_LEVEL", Categories: []string{"CSR", "FILE", "PACKAGE", "WIRE_JSON", "WIRE"}, Default: true, Purpose: "an RPC keeps its idempotency_level"},
	{ID: "RPC_SAME_REQUEST_TYPE", Categories: []string{"CSR", "FILE", "PACKAGE", "WIRE_JSON", "WIRE"}, Default: true, Purpose: "an RPC keeps its request type"},
	{ID: "RPC_SAME_RESPONSE_TYPE", Categories: []string{"CSR", "FILE", "PACKAGE", "WIRE_JSON", "WIRE"}, Default: true, Purpose: "an RPC keeps its response type"},
	{ID: "RPC_SAME_SERVER_STREAMING", Categories: []string{"CSR", "FILE", "PACKAGE", "WIRE_JSON", "WIRE"}, Default: true, Purpose: "an RPC keeps its server streaming"},
	{ID: "PACKAGE_ENUM_NO_DELETE", Categories: []string{"PACKAGE"}, Default: false, Purpose: "an enum of a package still exists somewhere in that package"},
	{ID: "PACKAGE_EXTENSION_NO_DELETE", Categories: []string{"PACKAGE"}, Default: false, Purpose: "an extension of a package still exists somewhere in that package"},
	{ID: "PACKAGE_MESSAGE_NO_DELETE", Categories: []string{"PACKAGE"}, Default: false, Purpose: "a message of a package still exists somewhere in that package"},
	{ID: "PACKAGE_NO_DELETE", Categories: []string{"PACKAGE"}, Default: false, Purpose: "every package still has at least one file"},
	{ID: "PACKAGE_SERVICE_NO_DELETE", Categories: []string{"PACKAGE"}, Default: false, Purpose: "a service of a package still exists somewhere in that package"},
	{ID: "ENUM_VALUE_NO_DELETE_UNLESS_NAME_RESERVED", Categories: []string{"CSR", "WIRE_JSON"}, Default: false, Purpose: "a deleted enum value has its names reserved"},
	{ID: "FIELD_NO_DELETE_UNLESS_NAME_RESERVED", Categories: []string{"CSR", "WIRE_JSON"}, Default: false, Purpose: "a deleted field has its name reserved"},
	{ID: "FIELD_WIRE_JSON_COMPATIBLE_CARDINALITY", Categories: []string{"CSR", "WIRE_JSON"}, Default: false, Purpose: "a field's cardinality changes only in ways that keep binary and JSON encodings"},
	{ID: "FIELD_WIRE_JSON_COMPATIBLE_TYPE", Categories: []string{"CSR", "WIRE_JSON"}, Default: false, Purpose: "a field's type changes only in ways that keep binary and JSON encodings"},
	{ID: "ENUM_VALUE_NO_DELETE_UNLESS_NUMBER_RESERVED", Categories: []string{"CSR", "WIRE_JSON", "WIRE"}, Default: false, Purpose: "a deleted enum value has its number reserved"},
	{ID: "FIELD_NO_DELETE_UNLESS_NUMBER_RESERVED", Categories: []string{"CSR", "WIRE_JSON", "WIRE"}, Default: false, Purpose: "a deleted field has its number reserved"},
	{ID: "FIELD_WIRE_COMPATIBLE_CARDINALITY", Categories: []string{"WIRE"}, Default: false, Purpose: "a field's cardinality changes only in ways that keep the binary encoding"},
	{ID: "FIELD_WIRE_COMPATIBLE_TYPE", Categories: []string{"WIRE"}, Default: false, Purpose: "a field's type changes only in ways that keep the binary encoding"},
	{ID: "SINCE_COMMENT_MISSING", Categories: []string{"ADR044"}, Purpose: "an added message, field, enum, enum value, service or rpc says since which version it exists (// Since: NAME VERSION or a cosmos_proto *_added_in option)"},
	{ID: "SINCE_COMMENT_MALFORMED", Categories: []string{"ADR044"}, Purpose: "a Since line has the exact form \"Since: NAME VERSION{, VERSION}\""},
	{ID: "RESERVED_ADDED", Categories: []string{"ADR044"}, Purpose: "a removed field or enum value is replaced by a reserved statement: ADR-044 asks to keep it and mark it deprecated instead (reserving hides it from clients that still set it; cosmos-sdk issue 9446)"},
	{ID: "DEPRECATED_ADDED", Categories: []string{"ADR044"}, Info: true, Purpose: "notes elements newly marked deprecated (informational)"},
	{ID: "MAJOR_VERSION_SAME_PACKAGE", Categories: []string{"PROTOCOL"}, Purpose: "a new major protocol version uses a new package name"},
	{ID: "RELEASED_FILE_CHANGED", Categories: []string{"PROTOCOL"}, Purpose: "a released protocol version file changes only in comments and whitespace"},
	{ID: "MINOR_VERSION_BREAKING", Categories: []string{"PROTOCOL"}, Purpose: "a minor protocol version only adds to the previous minor (no WIRE_JSON finding); findings keep the WIRE_JSON rule's own ID"},
}

var ruleByID = func() map[string]*Rule {
	m := make(map[string]*Rule, len(Rules))
	for i := range Rules {
		m[Rules[i].ID] = &Rules[i]
	}
	return m
}()

// RuleByID returns the rule with the given ID, or nil.
func RuleByID(id string) *Rule { return ruleByID[id] }

// Categories lists the known category names.
var Categories = []string{CategoryFILE, CategoryPACKAGE, CategoryWIREJSON, CategoryWIRE, CategoryCSR, CategoryADR044, CategoryPROTOCOL}

// DefaultUse is the rule selection used when Options.Use is empty.
var DefaultUse = []string{CategoryFILE, CategoryADR044}

// DeprecatedRules are rule IDs that buf still accepts but no longer
// checks, with the reason. SelectRules accepts them and enables nothing for
// them; DeprecationWarnings says so.
var DeprecatedRules = map[string]string{
	"MESSAGE_SAME_MESSAGE_SET_WIRE_FORMAT": "buf stopped checking message_set_wire_format because protobuf-go no longer supports MessageSets",
}

// DeprecationWarnings returns one warning for each deprecated rule ID named
// in use or except, in sorted order, for the caller to print (plugkit proto
// prints them on stderr, as buf does, and carries on).
func DeprecationWarnings(use, except []string) []string {
	seen := map[string]bool{}
	for _, name := range append(append([]string(nil), use...), except...) {
		name = strings.TrimSpace(name)
		if _, ok := DeprecatedRules[name]; ok {
			seen[name] = true
		}
	}
	out := make([]string, 0, len(seen))
	for _, id := range sortedIDs(seen) {
		out = append(out, fmt.Sprintf("rule %s is deprecated and checks nothing (%s); it is still accepted, so nothing breaks, but you can remove it from your rule selection", id, DeprecatedRules[id]))
	}
	return out
}

// SelectRules resolves use and except, each a list of categories or rule
// IDs, into the set of enabled rule IDs. An empty use means DefaultUse.
func SelectRules(use, except []string) (map[string]bool, error) {
	if len(use) == 0 {
		use = DefaultUse
	}
	expand := func(names []string) (map[string]bool, error) {
		set := map[string]bool{}
		for _, name := range names {
			name = strings.TrimSpace(name)
			if name == "" {
				continue
			}
			if r := ruleByID[name]; r != nil {
				set[r.ID] = true
				continue
			}
			if _, ok := DeprecatedRules[name]; ok {
				continue // accepted, checks nothing (see DeprecatedRules)
			}
			found := false
			for _, r := range Rules {
				for _, c := range r.Categories {
					if c == name {
						set[r.ID] = true
						found = true
					}
				}
			}
			if !found {
				return nil, fmt.Errorf("unknown rule or category %q (categories: %s; run \"plugkit proto rules\" for rule IDs)", name, strings.Join(Categories, ", "))
			}
		}
		return set, nil
	}
	enabled, err := expand(use)
	if err != nil {
		return nil, err
	}
	excluded, err := expand(except)
	if err != nil {
		return nil, err
	}
	for id := range excluded {
		delete(enabled, id)
	}
	return enabled, nil
}

// sortedIDs returns the IDs of a rule set in sorted order.
func sortedIDs(set map[string]bool) []string {
	ids := make([]string, 0, len(set))
	for id := range set {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}
