// Package protocheck checks protobuf schemas for breaking changes.
//
// It implements buf's breaking-change rules (the FILE, PACKAGE, WIRE_JSON
// and WIRE categories of buf v1.75, same rule IDs, same pairing, same
// messages and source spans), the rules of Cosmos ADR-044 (category ADR044)
// and checks for versioned protocol files (category PROTOCOL). Files are
// parsed with github.com/bufbuild/protocompile; neither protoc nor buf is
// needed.
//
// Each stage is a package of its own, importing only the stages before it
// (as bufbuild/protocompile splits parser, linker and reporter), so that a
// tool links only what it uses:
//
//	report     findings and their formats: text, JSON (buf's), GitHub
//	           annotations and JUnit XML
//	ruleset    the rules, their categories and the selection (use, except)
//	bufconfig  buf.yaml, buf.work.yaml, buf.lock and buf's module cache
//	load       reads a directory or git input and compiles it into an *Image
//	           (compile errors keep their positions: *CompileError)
//	protocheck the checks: Breaking and BreakingBuf pair two images and
//	           return findings; History checks NAME<major>.<minor>.proto files
//
// The checks take the *load.Image of each side and return report.Finding
// values; callers use the stage packages for the rest (load.Load,
// report.Write, ruleset.Rules, ...).
//
// # Pairing
//
// As in buf, files pair by path; messages, enums and services by full name;
// fields by number within a paired message; enum values by number within a
// paired enum; RPCs by name within a paired service; extensions by full
// name. Deletion rules of the FILE category look for an element in the file
// of the same path only, the PACKAGE category anywhere in the package.
//
// # ADR044
//
// SINCE_COMMENT_MISSING: an added message, field, enum, enum value, service
// or RPC needs a line "Since: NAME VERSION{, VERSION}" in its leading or
// trailing comment, or a cosmos_proto option message_added_in (93002),
// field_added_in (93003) or method_added_in (93001). An added element covers
// what it contains; a new file is covered by a Since line in the comments
// of its syntax or package statement, or by cosmos_proto.file_added_in.
// SINCE_COMMENT_MALFORMED: a line meant as a Since line (IsSinceLine: "since"
// with a colon, or followed only by a name and versions; prose such as
// "Since v2.0, the timestamps are zero" is not one) that does not have the
// exact form (ParseSince), or names another project than
// Options.SinceName. Lines already present on the old element are not
// reported again. RESERVED_ADDED: a removed field or enum value whose
// number or name became reserved. DEPRECATED_ADDED (informational, never
// fails a run): an element newly marked deprecated.
//
// # Deliberate differences from buf
//
// Options.BufCompat and Options.BufNames switch all of them off; the tests
// check that plugkit then reports exactly what buf v1.75 reports.
//
//  1. Names. buf names messages, enums and services by their short name
//     (`Field "6" with name "server_capabilities" on message "Response"`),
//     which is ambiguous in files such as tfplugin5.proto where many
//     messages are called Response. plugkit uses full names
//     (`on message "tfplugin5.GetProviderSchema.Response"`), also for
//     deleted elements (`"tfplugin5.GetProviderSchema.ServerCapabilities"`
//     instead of `"GetProviderSchema.ServerCapabilities"`). Field, oneof,
//     RPC and enum value names stay short: they are scoped by the named
//     container. (BufNames restores buf's names.)
//
//  2. Moved messages. When a message is deleted and a message that only the
//     new version has reads everything the old one wrote (same field
//     numbers, names, JSON names, kinds and cardinalities, recursively; new
//     fields may be added), plugkit reports one MESSAGE_NO_DELETE that names
//     the new location, with a hint listing the fields that now use it,
//     instead of buf's MESSAGE_NO_DELETE plus a FIELD_SAME_TYPE per field.
//     A message without fields has the structure of every message, so it
//     counts as moved only to a message of the same name or to one that a
//     field which used it now uses.
//     Example: tfplugin 5.3 -> 5.4 moved GetProviderSchema.ServerCapabilities
//     to the top level as ServerCapabilities (adding one field); buf reports
//     MESSAGE_NO_DELETE and FIELD_SAME_TYPE under FILE.
//
//  3. Structurally compatible message types. Under WIRE and WIRE_JSON a
//     field whose message type was replaced by a structurally compatible
//     message (as in 2) is not a break: the bytes and the JSON are the same.
//     buf reports FIELD_WIRE_COMPATIBLE_TYPE and FIELD_WIRE_JSON_COMPATIBLE_TYPE
//     for tfplugin 5.3 -> 5.4 and 6.3 -> 6.4; plugkit reports nothing.
//     FIELD_SAME_TYPE (FILE) still reports such a change when the old message
//     still exists, with a hint that the encodings are unchanged.
//
//  4. Renamed fields. A field that keeps its number but changes its name is
//     one finding, FIELD_SAME_NAME: `Field "1" on message "a.M" was renamed
//     from "old_name" to "new_name".`, with a hint; buf also reports
//     FIELD_SAME_JSON_NAME for the JSON name that follows from the new name.
//     An explicit json_name change is still reported on its own. The hint
//     says the binary encoding is unchanged only when the type and the
//     cardinality are unchanged too and the new name did not belong to
//     another number. Fields whose numbers were permuted are one
//     FIELD_SAME_NAME on the message (`Fields on message "a.M" exchanged
//     numbers: "b" from 2 to 1, "a" from 1 to 2.`); buf reports a
//     FIELD_SAME_NAME and a FIELD_SAME_JSON_NAME per number.
//
//  5. Renumbered fields. A deleted field whose name now has another number
//     is one FIELD_NO_DELETE saying so (`Previously present field "2" with
//     name "b" on message "a.M" was deleted: the field "b" now has number
//     1.`); buf reports FIELD_NO_DELETE for number 2 plus FIELD_SAME_NAME
//     and FIELD_SAME_JSON_NAME for number 1 when number 1 had another name.
//     FIELD_NO_DELETE_UNLESS_NAME_RESERVED is not reported for it (the name
//     lives on).
//
//  6. PACKAGE_ENUM_NO_DELETE, PACKAGE_EXTENSION_NO_DELETE and
//     PACKAGE_MESSAGE_NO_DELETE: buf v1.75 only checks packages that still
//     have at least one enum (extension, message) in the new version, so
//     deleting the last enum of a package goes unreported. plugkit checks
//     every package that still exists.
//
//  7. Wording. buf prints `on message "M"q moved from oneof` (a stray "q")
//     for FIELD_SAME_ONEOF; plugkit drops the "q" unless BufNames is set.
//
//  8. Exit status and output. A .proto file that does not compile makes
//     "plugkit proto breaking" exit 1 (buf: 100), with every error as
//     path:line:col, one line per unresolved import, and says how to supply
//     missing files (-I DIR); with --buf-compat it is reported as buf does,
//     as COMPILE findings ((*load.CompileError).Findings) and exit 100. JSON lines have
//     buf's keys in buf's order; plugkit adds "severity" (only for
//     informational findings) and "hint" (only when set) after "message".
//     Columns are buf's: terminal cells with tab stops of 4 in findings,
//     bytes in compile errors. Syntax errors keep protocompile's wording
//     (buf v1.75's own compiler words them differently).
//
//  9. Imports. buf also counts the files an input imports (such as
//     google/protobuf/timestamp.proto) in FILE_NO_DELETE and
//     PACKAGE_NO_DELETE: tfplugin 5.0 against 5.9 reports
//     `Previously present file "google/protobuf/timestamp.proto" was
//     deleted.` and package "google.protobuf" deleted, because 5.0 no longer
//     imports it; in a workspace each module is compared with what it
//     imports from the other modules, so a module that stops importing a
//     file of another module "deletes" it and the messages it declared
//     from its package (PACKAGE_MESSAGE_NO_DELETE). plugkit checks only the
//     input's own files; --buf-compat reports these as buf does, and
//     Options.ExcludeImports (--exclude-imports) drops them as buf's flag.
//
//  10. LEGACY_REQUIRED. A proto2 required field and an editions field with
//     features.field_presence = LEGACY_REQUIRED are the same on the wire
//     and in JSON. buf v1.75 reads the descriptor's label, which editions
//     never set to required, so MESSAGE_SAME_REQUIRED_FIELDS reports a
//     required field that became LEGACY_REQUIRED as deleted and does not
//     notice a new LEGACY_REQUIRED field. plugkit treats both as required:
//     the first is no finding, the second is "added".
//
// Both modes share buf's semantics where buf is right: extensions pair by
// extendee and number (a renamed or moved extension is a FIELD_SAME_NAME,
// a changed type a FIELD_*_TYPE), FIELD_SAME_CPP_STRING_TYPE and
// FIELD_SAME_JAVA_UTF8_VALIDATION read the editions features
// (pb.cpp).string_type and (pb.java).utf8_validation, inherited from
// enclosing elements and the file, and FIELD_SAME_DEFAULT compares defaults
// across type changes by value (123 as int32 and as int64 are equal, so are
// true and 1; text never equals a number).
//
// # PROTOCOL
//
// History checks NAME<major>.<minor>.proto files: each minor against the
// previous minor of its major under WIRE_JSON (findings keep the WIRE_JSON
// rule IDs, point into the newer file and say which versions were
// compared), MAJOR_VERSION_SAME_PACKAGE for a new major that keeps the
// package, and RELEASED_FILE_CHANGED for a file that exists in the
// HistoryOptions.Against git input and differs from it in more than
// comments and whitespace (the finding points at the first changed token).
package protocheck
