package protocheck

// ruleCase is one small old/new pair of .proto files that exercises one rule.
// breaks says whether the rule must report at least one finding on it.
type ruleCase struct {
	name   string
	rule   string
	breaks bool
	old    map[string]string
	new    map[string]string
}

// one returns a single-file input named a.proto.
func one(src string) map[string]string { return map[string]string{"a.proto": src} }

const (
	p2 = "syntax = \"proto2\";\npackage a;\n"
	p3 = "syntax = \"proto3\";\npackage a;\n"
	ed = "edition = \"2023\";\npackage a;\n"
)

// fileOptionCases builds a positive and a negative case for a FILE_SAME_* option rule.
func fileOptionCases(rule, oldOpt, newOpt string) []ruleCase {
	return []ruleCase{
		{name: rule + "/changed", rule: rule, breaks: true,
			old: one(p3 + oldOpt + "\nmessage M {}\n"), new: one(p3 + newOpt + "\nmessage M {}\n")},
		{name: rule + "/same", rule: rule,
			old: one(p3 + oldOpt + "\nmessage M {}\n"), new: one(p3 + oldOpt + "\nmessage M { int32 x = 1; }\n")},
	}
}

var ruleCases = func() []ruleCase {
	cs := []ruleCase{
		{name: "EXTENSION_NO_DELETE/deleted", rule: "EXTENSION_NO_DELETE", breaks: true,
			old: one(p2 + "message M { extensions 10 to 20; }\nextend M { optional int32 e = 10; }\n"),
			new: one(p2 + "message M { extensions 10 to 20; }\n")},
		{name: "EXTENSION_NO_DELETE/nested", rule: "EXTENSION_NO_DELETE", breaks: true,
			old: one(p2 + "message M { extensions 10 to 20; }\nmessage N {\n  extend M { optional int32 e = 10; }\n}\n"),
			new: one(p2 + "message M { extensions 10 to 20; }\nmessage N {\n}\n")},
		{name: "EXTENSION_NO_DELETE/kept", rule: "EXTENSION_NO_DELETE",
			old: one(p2 + "message M { extensions 10 to 20; }\nextend M { optional int32 e = 10; }\n"),
			new: one(p2 + "message M { extensions 10 to 20; }\nextend M { optional int32 e = 10; optional int32 f = 11; }\n")},

		{name: "SERVICE_NO_DELETE/deleted", rule: "SERVICE_NO_DELETE", breaks: true,
			old: one(p3 + "message M {}\nservice S {\n  rpc R(M) returns (M);\n}\n"),
			new: one(p3 + "message M {}\n")},
		{name: "SERVICE_NO_DELETE/kept", rule: "SERVICE_NO_DELETE",
			old: one(p3 + "message M {}\nservice S {\n  rpc R(M) returns (M);\n}\n"),
			new: one(p3 + "message M {}\nservice S {\n  rpc R(M) returns (M);\n}\nservice T {}\n")},

		{name: "ENUM_NO_DELETE/top", rule: "ENUM_NO_DELETE", breaks: true,
			old: one(p3 + "enum E { E_UNSPECIFIED = 0; }\nmessage M {}\n"),
			new: one(p3 + "message M {}\n")},
		{name: "ENUM_NO_DELETE/nested", rule: "ENUM_NO_DELETE", breaks: true,
			old: one(p3 + "message M {\n  message N {\n    enum E { E_UNSPECIFIED = 0; }\n  }\n}\n"),
			new: one(p3 + "message M {\n  message N {\n  }\n}\n")},
		{name: "ENUM_NO_DELETE/kept", rule: "ENUM_NO_DELETE",
			old: one(p3 + "enum E { E_UNSPECIFIED = 0; }\n"),
			new: one(p3 + "enum E { E_UNSPECIFIED = 0; E_B = 1; }\n")},

		{name: "FILE_NO_DELETE/deleted", rule: "FILE_NO_DELETE", breaks: true,
			old: map[string]string{"a.proto": p3 + "message M {}\n", "b/b.proto": "syntax = \"proto3\";\npackage b;\nmessage B {}\n"},
			new: one(p3 + "message M {}\n")},
		{name: "FILE_NO_DELETE/kept", rule: "FILE_NO_DELETE",
			old: one(p3 + "message M {}\n"),
			new: map[string]string{"a.proto": p3 + "message M {}\n", "b/b.proto": "syntax = \"proto3\";\npackage b;\nmessage B {}\n"}},

		{name: "MESSAGE_NO_DELETE/top", rule: "MESSAGE_NO_DELETE", breaks: true,
			old: one(p3 + "message M {}\nmessage N {}\n"),
			new: one(p3 + "message M {}\n")},
		{name: "MESSAGE_NO_DELETE/nested", rule: "MESSAGE_NO_DELETE", breaks: true,
			old: one(p3 + "message M {\n  message N {\n    message O {}\n  }\n}\n"),
			new: one(p3 + "message M {\n  message N {}\n}\n")},
		{name: "MESSAGE_NO_DELETE/kept", rule: "MESSAGE_NO_DELETE",
			old: one(p3 + "message M {}\n"),
			new: one(p3 + "message M {}\nmessage N {}\n")},

		{name: "ENUM_SAME_TYPE/open", rule: "ENUM_SAME_TYPE", breaks: true,
			old: one(ed + "enum E {\n  option features.enum_type = CLOSED;\n  A = 0;\n}\n"),
			new: one(ed + "enum E {\n  A = 0;\n}\n")},
		{name: "ENUM_SAME_TYPE/closed", rule: "ENUM_SAME_TYPE", breaks: true,
			old: one(ed + "enum E {\n  A = 0;\n}\n"),
			new: one(ed + "enum E {\n  option features.enum_type = CLOSED;\n  A = 0;\n}\n")},
		{name: "ENUM_SAME_TYPE/same", rule: "ENUM_SAME_TYPE",
			old: one(ed + "enum E {\n  A = 0;\n}\n"),
			new: one(ed + "enum E {\n  A = 0;\n  B = 1;\n}\n")},

		{name: "FIELD_SAME_CARDINALITY/repeated", rule: "FIELD_SAME_CARDINALITY", breaks: true,
			old: one(p3 + "message M {\n  int32 a = 1;\n}\n"),
			new: one(p3 + "message M {\n  repeated int32 a = 1;\n}\n")},
		{name: "FIELD_SAME_CARDINALITY/optional", rule: "FIELD_SAME_CARDINALITY", breaks: true,
			old: one(p3 + "message M {\n  int32 a = 1;\n}\n"),
			new: one(p3 + "message M {\n  optional int32 a = 1;\n}\n")},
		{name: "FIELD_SAME_CARDINALITY/same", rule: "FIELD_SAME_CARDINALITY",
			old: one(p3 + "message M {\n  int32 a = 1;\n  map<string, int32> m = 2;\n}\n"),
			new: one(p3 + "message M {\n  int32 a = 1;\n  map<string, int32> m = 2;\n}\n")},

		{name: "FIELD_SAME_CPP_STRING_TYPE/cord", rule: "FIELD_SAME_CPP_STRING_TYPE", breaks: true,
			old: one(p2 + "message M {\n  optional string s = 1;\n}\n"),
			new: one(p2 + "message M {\n  optional string s = 1 [ctype = CORD];\n}\n")},
		{name: "FIELD_SAME_CPP_STRING_TYPE/piece_to_string", rule: "FIELD_SAME_CPP_STRING_TYPE",
			old: one(p2 + "message M {\n  optional string s = 1 [ctype = STRING_PIECE];\n}\n"),
			new: one(p2 + "message M {\n  optional string s = 1;\n}\n")},

		{name: "FIELD_SAME_JAVA_UTF8_VALIDATION/on", rule: "FIELD_SAME_JAVA_UTF8_VALIDATION", breaks: true,
			old: one(p2 + "message M {\n  optional string s = 1;\n}\n"),
			new: one(p2 + "option java_string_check_utf8 = true;\nmessage M {\n  optional string s = 1;\n}\n")},
		{name: "FIELD_SAME_JAVA_UTF8_VALIDATION/same", rule: "FIELD_SAME_JAVA_UTF8_VALIDATION",
			old: one(p2 + "message M {\n  optional string s = 1;\n}\n"),
			new: one(p2 + "option java_string_check_utf8 = false;\nmessage M {\n  optional string s = 1;\n}\n")},

		{name: "FIELD_SAME_JSTYPE/string", rule: "FIELD_SAME_JSTYPE", breaks: true,
			old: one(p3 + "message M {\n  int64 a = 1;\n}\n"),
			new: one(p3 + "message M {\n  int64 a = 1 [jstype = JS_STRING];\n}\n")},
		{name: "FIELD_SAME_JSTYPE/same", rule: "FIELD_SAME_JSTYPE",
			old: one(p3 + "message M {\n  int64 a = 1;\n}\n"),
			new: one(p3 + "message M {\n  int64 a = 1 [jstype = JS_NORMAL];\n}\n")},

		{name: "FIELD_SAME_UTF8_VALIDATION/none", rule: "FIELD_SAME_UTF8_VALIDATION", breaks: true,
			old: one(ed + "message M {\n  string s = 1;\n}\n"),
			new: one(ed + "message M {\n  string s = 1 [features.utf8_validation = NONE];\n}\n")},
		{name: "FIELD_SAME_UTF8_VALIDATION/same", rule: "FIELD_SAME_UTF8_VALIDATION",
			old: one(ed + "message M {\n  string s = 1;\n}\n"),
			new: one(ed + "message M {\n  string s = 1 [features.utf8_validation = VERIFY];\n}\n")},

		{name: "RPC_NO_DELETE/deleted", rule: "RPC_NO_DELETE", breaks: true,
			old: one(p3 + "message M {}\nservice S {\n  rpc R(M) returns (M);\n  rpc Q(M) returns (M);\n}\n"),
			new: one(p3 + "message M {}\nservice S {\n  rpc R(M) returns (M);\n}\n")},
		{name: "RPC_NO_DELETE/kept", rule: "RPC_NO_DELETE",
			old: one(p3 + "message M {}\nservice S {\n  rpc R(M) returns (M);\n}\n"),
			new: one(p3 + "message M {}\nservice S {\n  rpc R(M) returns (M);\n  rpc Q(M) returns (M);\n}\n")},

		{name: "ENUM_VALUE_NO_DELETE/deleted", rule: "ENUM_VALUE_NO_DELETE", breaks: true,
			old: one(p3 + "enum E {\n  E_UNSPECIFIED = 0;\n  E_A = 1;\n}\n"),
			new: one(p3 + "enum E {\n  E_UNSPECIFIED = 0;\n}\n")},
		{name: "ENUM_VALUE_NO_DELETE/kept", rule: "ENUM_VALUE_NO_DELETE",
			old: one(p3 + "enum E {\n  E_UNSPECIFIED = 0;\n  E_A = 1;\n}\n"),
			new: one(p3 + "enum E {\n  E_UNSPECIFIED = 0;\n  E_B = 1;\n}\n")},

		{name: "EXTENSION_MESSAGE_NO_DELETE/shrunk", rule: "EXTENSION_MESSAGE_NO_DELETE", breaks: true,
			old: one(p2 + "message M {\n  extensions 10 to 20, 30 to max;\n}\n"),
			new: one(p2 + "message M {\n  extensions 10 to 12, 15 to 20;\n}\n")},
		{name: "EXTENSION_MESSAGE_NO_DELETE/split", rule: "EXTENSION_MESSAGE_NO_DELETE",
			old: one(p2 + "message M {\n  extensions 10 to 20;\n}\n"),
			new: one(p2 + "message M {\n  extensions 10 to 14;\n  extensions 15 to 30;\n}\n")},

		{name: "FIELD_NO_DELETE/deleted", rule: "FIELD_NO_DELETE", breaks: true,
			old: one(p3 + "message M {\n  int32 a = 1;\n  int32 b = 2;\n}\n"),
			new: one(p3 + "message M {\n  int32 a = 1;\n}\n")},
		{name: "FIELD_NO_DELETE/extension", rule: "FIELD_NO_DELETE",
			old: one(p3 + "message M {\n  int32 a = 1;\n}\n"),
			new: one(p3 + "message M {\n  int32 a = 1;\n  int32 b = 2;\n}\n")},

		{name: "FIELD_SAME_TYPE/scalar", rule: "FIELD_SAME_TYPE", breaks: true,
			old: one(p3 + "message M {\n  int32 a = 1;\n}\n"),
			new: one(p3 + "message M {\n  int64 a = 1;\n}\n")},
		{name: "FIELD_SAME_TYPE/message", rule: "FIELD_SAME_TYPE", breaks: true,
			old: one(p3 + "message M {\n  N a = 1;\n}\nmessage N {}\nmessage O {}\n"),
			new: one(p3 + "message M {\n  O a = 1;\n}\nmessage N {}\nmessage O {}\n")},
		{name: "FIELD_SAME_TYPE/to_enum", rule: "FIELD_SAME_TYPE", breaks: true,
			old: one(p3 + "message M {\n  int32 a = 1;\n}\nenum E { E_UNSPECIFIED = 0; }\n"),
			new: one(p3 + "message M {\n  E a = 1;\n}\nenum E { E_UNSPECIFIED = 0; }\n")},
		{name: "FIELD_SAME_TYPE/map_value", rule: "FIELD_SAME_TYPE", breaks: true,
			old: one(p3 + "message M {\n  map<string, int32> m = 1;\n}\n"),
			new: one(p3 + "message M {\n  map<string, int64> m = 1;\n}\n")},
		{name: "FIELD_SAME_TYPE/extension", rule: "FIELD_SAME_TYPE", breaks: true,
			old: one(p2 + "message M { extensions 10 to 20; }\nextend M { optional int32 e = 10; }\n"),
			new: one(p2 + "message M { extensions 10 to 20; }\nextend M { optional string e = 10; }\n")},
		{name: "FIELD_SAME_TYPE/group", rule: "FIELD_SAME_TYPE", breaks: true,
			old: one(p2 + "message M {\n  optional group G = 1 { optional int32 a = 2; }\n}\n"),
			new: one(p2 + "message M {\n  optional int32 g = 1;\n}\n")},
		{name: "FIELD_SAME_TYPE/same", rule: "FIELD_SAME_TYPE",
			old: one(p3 + "message M {\n  N a = 1;\n}\nmessage N {}\n"),
			new: one(p3 + "message M {\n  .a.N a = 1;\n}\nmessage N {}\n")},

		{name: "FILE_SAME_SYNTAX/changed", rule: "FILE_SAME_SYNTAX", breaks: true,
			old: one(p2 + "message M {}\n"), new: one(p3 + "message M {}\n")},
		{name: "FILE_SAME_SYNTAX/implicit", rule: "FILE_SAME_SYNTAX",
			old: one("package a;\nmessage M {}\n"), new: one(p2 + "message M {}\n")},

		{name: "MESSAGE_NO_REMOVE_STANDARD_DESCRIPTOR_ACCESSOR/set", rule: "MESSAGE_NO_REMOVE_STANDARD_DESCRIPTOR_ACCESSOR", breaks: true,
			old: one(p3 + "message M {\n  int32 a = 1;\n}\n"),
			new: one(p3 + "message M {\n  option no_standard_descriptor_accessor = true;\n  int32 a = 1;\n}\n")},
		{name: "MESSAGE_NO_REMOVE_STANDARD_DESCRIPTOR_ACCESSOR/unset", rule: "MESSAGE_NO_REMOVE_STANDARD_DESCRIPTOR_ACCESSOR",
			old: one(p3 + "message M {\n  option no_standard_descriptor_accessor = true;\n  int32 a = 1;\n}\n"),
			new: one(p3 + "message M {\n  int32 a = 1;\n}\n")},

		{name: "ONEOF_NO_DELETE/deleted", rule: "ONEOF_NO_DELETE", breaks: true,
			old: one(p3 + "message M {\n  oneof o {\n    int32 a = 1;\n  }\n  optional int32 b = 2;\n}\n"),
			new: one(p3 + "message M {\n  int32 a = 1;\n  int32 b = 2;\n}\n")},
		{name: "ONEOF_NO_DELETE/synthetic", rule: "ONEOF_NO_DELETE",
			old: one(p3 + "message M {\n  optional int32 b = 2;\n}\n"),
			new: one(p3 + "message M {\n  int32 b = 2;\n}\n")},

		{name: "ENUM_SAME_JSON_FORMAT/legacy", rule: "ENUM_SAME_JSON_FORMAT", breaks: true,
			old: one(ed + "enum E {\n  A = 0;\n}\n"),
			new: one(ed + "enum E {\n  option features.json_format = LEGACY_BEST_EFFORT;\n  A = 0;\n}\n")},
		{name: "ENUM_SAME_JSON_FORMAT/allow", rule: "ENUM_SAME_JSON_FORMAT",
			old: one(ed + "enum E {\n  option features.json_format = LEGACY_BEST_EFFORT;\n  A = 0;\n}\n"),
			new: one(ed + "enum E {\n  A = 0;\n}\n")},

		{name: "ENUM_VALUE_SAME_NAME/renamed", rule: "ENUM_VALUE_SAME_NAME", breaks: true,
			old: one(p3 + "enum E {\n  E_UNSPECIFIED = 0;\n  E_A = 1;\n}\n"),
			new: one(p3 + "enum E {\n  E_UNSPECIFIED = 0;\n  E_B = 1;\n}\n")},
		{name: "ENUM_VALUE_SAME_NAME/alias_added", rule: "ENUM_VALUE_SAME_NAME",
			old: one(p3 + "enum E {\n  E_UNSPECIFIED = 0;\n  E_A = 1;\n}\n"),
			new: one(p3 + "enum E {\n  option allow_alias = true;\n  E_UNSPECIFIED = 0;\n  E_A = 1;\n  E_B = 1;\n}\n")},
		{name: "ENUM_VALUE_SAME_NAME/alias_removed", rule: "ENUM_VALUE_SAME_NAME", breaks: true,
			old: one(p3 + "enum E {\n  option allow_alias = true;\n  E_UNSPECIFIED = 0;\n  E_A = 1;\n  E_B = 1;\n}\n"),
			new: one(p3 + "enum E {\n  option allow_alias = true;\n  E_UNSPECIFIED = 0;\n  E_A = 1;\n  E_C = 1;\n}\n")},

		{name: "FIELD_SAME_JSON_NAME/changed", rule: "FIELD_SAME_JSON_NAME", breaks: true,
			old: one(p3 + "message M {\n  int32 a_b = 1;\n}\n"),
			new: one(p3 + "message M {\n  int32 a_b = 1 [json_name = \"x\"];\n}\n")},
		{name: "FIELD_SAME_JSON_NAME/same", rule: "FIELD_SAME_JSON_NAME",
			old: one(p3 + "message M {\n  int32 a_b = 1;\n}\n"),
			new: one(p3 + "message M {\n  int32 a_b = 1 [json_name = \"aB\"];\n}\n")},

		{name: "FIELD_SAME_NAME/renamed", rule: "FIELD_SAME_NAME", breaks: true,
			old: one(p3 + "message M {\n  int32 a = 1;\n}\n"),
			new: one(p3 + "message M {\n  int32 b = 1;\n}\n")},
		{name: "FIELD_SAME_NAME/same", rule: "FIELD_SAME_NAME",
			old: one(p3 + "message M {\n  int32 a = 1;\n}\n"),
			new: one(p3 + "message M {\n  int64 a = 1;\n}\n")},

		{name: "MESSAGE_SAME_JSON_FORMAT/legacy", rule: "MESSAGE_SAME_JSON_FORMAT", breaks: true,
			old: one(ed + "message M {\n  int32 a = 1;\n}\n"),
			new: one(ed + "message M {\n  option features.json_format = LEGACY_BEST_EFFORT;\n  int32 a = 1;\n}\n")},
		{name: "MESSAGE_SAME_JSON_FORMAT/same", rule: "MESSAGE_SAME_JSON_FORMAT",
			old: one(ed + "message M {\n  int32 a = 1;\n}\n"),
			new: one(ed + "message M {\n  option features.json_format = ALLOW;\n  int32 a = 1;\n}\n")},

		{name: "FIELD_SAME_DEFAULT/changed", rule: "FIELD_SAME_DEFAULT", breaks: true,
			old: one(p2 + "message M {\n  optional int32 a = 1 [default = 1];\n  optional string s = 2 [default = \"x\"];\n}\n"),
			new: one(p2 + "message M {\n  optional int32 a = 1 [default = 2];\n  optional string s = 2;\n}\n")},
		{name: "FIELD_SAME_DEFAULT/kinds", rule: "FIELD_SAME_DEFAULT", breaks: true,
			old: one(p2 + "enum E { A = 0; B = 1; }\nmessage M {\n  optional E e = 1 [default = B];\n  optional bool b = 2 [default = true];\n  optional double d = 3 [default = 1.5];\n  optional bytes y = 4 [default = \"x\"];\n  optional uint64 u = 5 [default = 7];\n}\n"),
			new: one(p2 + "enum E { A = 0; B = 1; }\nmessage M {\n  optional E e = 1;\n  optional bool b = 2;\n  optional double d = 3 [default = 2.5];\n  optional bytes y = 4;\n  optional uint64 u = 5 [default = 8];\n}\n")},
		{name: "FIELD_SAME_DEFAULT/same", rule: "FIELD_SAME_DEFAULT",
			old: one(p2 + "message M {\n  optional int32 a = 1 [default = 0];\n  optional float f = 2 [default = 1.0];\n}\n"),
			new: one(p2 + "message M {\n  optional int32 a = 1;\n  optional float f = 2 [default = 1];\n}\n")},

		{name: "FIELD_SAME_ONEOF/into", rule: "FIELD_SAME_ONEOF", breaks: true,
			old: one(p3 + "message M {\n  int32 a = 1;\n}\n"),
			new: one(p3 + "message M {\n  oneof o {\n    int32 a = 1;\n  }\n}\n")},
		{name: "FIELD_SAME_ONEOF/moved", rule: "FIELD_SAME_ONEOF", breaks: true,
			old: one(p3 + "message M {\n  oneof o {\n    int32 a = 1;\n  }\n}\n"),
			new: one(p3 + "message M {\n  oneof p {\n    int32 a = 1;\n  }\n}\n")},
		{name: "FIELD_SAME_ONEOF/synthetic", rule: "FIELD_SAME_ONEOF",
			old: one(p3 + "message M {\n  int32 a = 1;\n}\n"),
			new: one(p3 + "message M {\n  optional int32 a = 1;\n}\n")},

		{name: "FILE_SAME_PACKAGE/changed", rule: "FILE_SAME_PACKAGE", breaks: true,
			old: one(p3 + "message M {}\n"), new: one("syntax = \"proto3\";\npackage b;\nmessage M {}\n")},
		{name: "FILE_SAME_PACKAGE/same", rule: "FILE_SAME_PACKAGE",
			old: one(p3 + "message M {}\n"), new: one(p3 + "message N {}\n")},

		{name: "MESSAGE_SAME_REQUIRED_FIELDS/added", rule: "MESSAGE_SAME_REQUIRED_FIELDS", breaks: true,
			old: one(p2 + "message M {\n  optional int32 a = 1;\n  required int32 b = 2;\n}\n"),
			new: one(p2 + "message M {\n  optional int32 a = 1;\n  required int32 c = 3;\n}\n")},
		{name: "MESSAGE_SAME_REQUIRED_FIELDS/same", rule: "MESSAGE_SAME_REQUIRED_FIELDS",
			old: one(p2 + "message M {\n  required int32 b = 2;\n}\n"),
			new: one(p2 + "message M {\n  required int32 b = 2;\n  optional int32 c = 3;\n}\n")},

		{name: "RESERVED_ENUM_NO_DELETE/deleted", rule: "RESERVED_ENUM_NO_DELETE", breaks: true,
			old: one(p3 + "enum E {\n  E_UNSPECIFIED = 0;\n  reserved 2 to 5, 9, 20 to max;\n  reserved \"X\", \"Y\";\n}\n"),
			new: one(p3 + "enum E {\n  E_UNSPECIFIED = 0;\n  reserved 3, 30 to 40;\n  reserved \"Y\";\n}\n")},
		{name: "RESERVED_ENUM_NO_DELETE/same", rule: "RESERVED_ENUM_NO_DELETE",
			old: one(p3 + "enum E {\n  E_UNSPECIFIED = 0;\n  reserved 2 to 5;\n  reserved \"X\";\n}\n"),
			new: one(p3 + "enum E {\n  E_UNSPECIFIED = 0;\n  reserved 2, 3 to 7;\n  reserved \"X\", \"Z\";\n}\n")},

		{name: "RESERVED_MESSAGE_NO_DELETE/deleted", rule: "RESERVED_MESSAGE_NO_DELETE", breaks: true,
			old: one(p3 + "message M {\n  reserved 2 to 5, 9, 20 to max;\n  reserved \"x\";\n}\n"),
			new: one(p3 + "message M {\n  reserved 3, 4;\n}\n")},
		{name: "RESERVED_MESSAGE_NO_DELETE/same", rule: "RESERVED_MESSAGE_NO_DELETE",
			old: one(p3 + "message M {\n  reserved 2 to 5;\n  reserved \"x\";\n}\n"),
			new: one(p3 + "message M {\n  reserved 2 to 3, 4 to 9;\n  reserved \"x\", \"y\";\n}\n")},

		{name: "RPC_SAME_CLIENT_STREAMING/changed", rule: "RPC_SAME_CLIENT_STREAMING", breaks: true,
			old: one(p3 + "message M {}\nservice S {\n  rpc R(M) returns (M);\n}\n"),
			new: one(p3 + "message M {}\nservice S {\n  rpc R(stream M) returns (M);\n}\n")},
		{name: "RPC_SAME_CLIENT_STREAMING/same", rule: "RPC_SAME_CLIENT_STREAMING",
			old: one(p3 + "message M {}\nservice S {\n  rpc R(M) returns (M);\n}\n"),
			new: one(p3 + "message M {}\nservice S {\n  rpc R(M) returns (stream M);\n}\n")},

		{name: "RPC_SAME_IDEMPOTENCY_LEVEL/changed", rule: "RPC_SAME_IDEMPOTENCY_LEVEL", breaks: true,
			old: one(p3 + "message M {}\nservice S {\n  rpc R(M) returns (M);\n}\n"),
			new: one(p3 + "message M {}\nservice S {\n  rpc R(M) returns (M) {\n    option idempotency_level = NO_SIDE_EFFECTS;\n  }\n}\n")},
		{name: "RPC_SAME_IDEMPOTENCY_LEVEL/removed", rule: "RPC_SAME_IDEMPOTENCY_LEVEL", breaks: true,
			old: one(p3 + "message M {}\nservice S {\n  rpc R(M) returns (M) {\n    option idempotency_level = IDEMPOTENT;\n  }\n}\n"),
			new: one(p3 + "message M {}\nservice S {\n  rpc R(M) returns (M);\n}\n")},
		{name: "RPC_SAME_IDEMPOTENCY_LEVEL/same", rule: "RPC_SAME_IDEMPOTENCY_LEVEL",
			old: one(p3 + "message M {}\nservice S {\n  rpc R(M) returns (M);\n}\n"),
			new: one(p3 + "message M {}\nservice S {\n  rpc R(M) returns (M) {\n    option idempotency_level = IDEMPOTENCY_UNKNOWN;\n  }\n}\n")},

		{name: "RPC_SAME_REQUEST_TYPE/changed", rule: "RPC_SAME_REQUEST_TYPE", breaks: true,
			old: one(p3 + "message M {}\nmessage N {}\nservice S {\n  rpc R(M) returns (M);\n}\n"),
			new: one(p3 + "message M {}\nmessage N {}\nservice S {\n  rpc R(N) returns (M);\n}\n")},
		{name: "RPC_SAME_REQUEST_TYPE/same", rule: "RPC_SAME_REQUEST_TYPE",
			old: one(p3 + "message M {}\nmessage N {}\nservice S {\n  rpc R(M) returns (M);\n}\n"),
			new: one(p3 + "message M {}\nmessage N {}\nservice S {\n  rpc R(M) returns (N);\n}\n")},

		{name: "RPC_SAME_RESPONSE_TYPE/changed", rule: "RPC_SAME_RESPONSE_TYPE", breaks: true,
			old: one(p3 + "message M {}\nmessage N {}\nservice S {\n  rpc R(M) returns (M);\n}\n"),
			new: one(p3 + "message M {}\nmessage N {}\nservice S {\n  rpc R(M) returns (N);\n}\n")},
		{name: "RPC_SAME_RESPONSE_TYPE/same", rule: "RPC_SAME_RESPONSE_TYPE",
			old: one(p3 + "message M {}\nmessage N {}\nservice S {\n  rpc R(M) returns (M);\n}\n"),
			new: one(p3 + "message M {}\nmessage N {}\nservice S {\n  rpc R(N) returns (M);\n}\n")},

		{name: "RPC_SAME_SERVER_STREAMING/changed", rule: "RPC_SAME_SERVER_STREAMING", breaks: true,
			old: one(p3 + "message M {}\nservice S {\n  rpc R(M) returns (stream M);\n}\n"),
			new: one(p3 + "message M {}\nservice S {\n  rpc R(M) returns (M);\n}\n")},
		{name: "RPC_SAME_SERVER_STREAMING/same", rule: "RPC_SAME_SERVER_STREAMING",
			old: one(p3 + "message M {}\nservice S {\n  rpc R(M) returns (stream M);\n}\n"),
			new: one(p3 + "message M {}\nservice S {\n  rpc R(stream M) returns (stream M);\n}\n")},

		{name: "PACKAGE_ENUM_NO_DELETE/deleted", rule: "PACKAGE_ENUM_NO_DELETE", // buf v1.75 reports nothing when no enum is left in the package
			breaks: false,
			old:    one(p3 + "enum E { E_UNSPECIFIED = 0; }\nmessage M {\n  enum F { F_UNSPECIFIED = 0; }\n}\n"),
			new:    one(p3 + "message M {\n}\n")},
		{name: "PACKAGE_ENUM_NO_DELETE/deleted_others_remain", rule: "PACKAGE_ENUM_NO_DELETE", breaks: true,
			old: one(p3 + "enum E { E_UNSPECIFIED = 0; }\nenum G { G_UNSPECIFIED = 0; }\nmessage M {\n  enum F { F_UNSPECIFIED = 0; }\n}\n"),
			new: one(p3 + "enum G { G_UNSPECIFIED = 0; }\nmessage M {\n}\n")},
		{name: "PACKAGE_ENUM_NO_DELETE/moved", rule: "PACKAGE_ENUM_NO_DELETE",
			old: one(p3 + "enum E { E_UNSPECIFIED = 0; }\n"),
			new: map[string]string{"a.proto": p3 + "message M {}\n", "b.proto": p3 + "enum E { E_UNSPECIFIED = 0; }\n"}},

		{name: "PACKAGE_EXTENSION_NO_DELETE/deleted", rule: "PACKAGE_EXTENSION_NO_DELETE", // buf v1.75 reports nothing when no extension is left in the package
			breaks: false,
			old:    one(p2 + "message M { extensions 10 to 20; }\nextend M { optional int32 e = 10; }\n"),
			new:    one(p2 + "message M { extensions 10 to 20; }\n")},
		{name: "PACKAGE_EXTENSION_NO_DELETE/deleted_others_remain", rule: "PACKAGE_EXTENSION_NO_DELETE", breaks: true,
			old: one(p2 + "message M { extensions 10 to 20; }\nextend M { optional int32 e = 10; optional int32 f = 11; }\n"),
			new: one(p2 + "message M { extensions 10 to 20; }\nextend M { optional int32 f = 11; }\n")},
		{name: "PACKAGE_EXTENSION_NO_DELETE/moved", rule: "PACKAGE_EXTENSION_NO_DELETE",
			old: one(p2 + "message M { extensions 10 to 20; }\nextend M { optional int32 e = 10; }\n"),
			new: map[string]string{"a.proto": p2 + "message M { extensions 10 to 20; }\n", "b.proto": p2 + "import \"a.proto\";\nextend M { optional int32 e = 10; }\n"}},

		{name: "PACKAGE_MESSAGE_NO_DELETE/deleted", rule: "PACKAGE_MESSAGE_NO_DELETE", breaks: true,
			old: one(p3 + "message M {\n  message N {}\n}\nmessage O {}\n"),
			new: one(p3 + "message M {\n}\n")},
		{name: "PACKAGE_MESSAGE_NO_DELETE/moved", rule: "PACKAGE_MESSAGE_NO_DELETE",
			old: one(p3 + "message M {}\nmessage O {}\n"),
			new: map[string]string{"a.proto": p3 + "message M {}\n", "b.proto": p3 + "message O {}\n"}},

		{name: "PACKAGE_NO_DELETE/deleted", rule: "PACKAGE_NO_DELETE", breaks: true,
			old: one(p3 + "message M {}\n"), new: one("syntax = \"proto3\";\npackage b;\nmessage M {}\n")},
		{name: "PACKAGE_NO_DELETE/kept", rule: "PACKAGE_NO_DELETE",
			old: one(p3 + "message M {}\n"),
			new: map[string]string{"a.proto": "syntax = \"proto3\";\npackage b;\nmessage M {}\n", "c.proto": p3 + "message C {}\n"}},

		{name: "PACKAGE_SERVICE_NO_DELETE/deleted", rule: "PACKAGE_SERVICE_NO_DELETE", breaks: true,
			old: one(p3 + "message M {}\nservice S {}\n"), new: one(p3 + "message M {}\n")},
		{name: "PACKAGE_SERVICE_NO_DELETE/moved", rule: "PACKAGE_SERVICE_NO_DELETE",
			old: one(p3 + "message M {}\nservice S {}\n"),
			new: map[string]string{"a.proto": p3 + "message M {}\n", "b.proto": p3 + "service S {}\n"}},

		{name: "ENUM_VALUE_NO_DELETE_UNLESS_NAME_RESERVED/deleted", rule: "ENUM_VALUE_NO_DELETE_UNLESS_NAME_RESERVED", breaks: true,
			old: one(p3 + "enum E {\n  E_UNSPECIFIED = 0;\n  E_A = 1;\n}\n"),
			new: one(p3 + "enum E {\n  E_UNSPECIFIED = 0;\n  reserved 1;\n}\n")},
		{name: "ENUM_VALUE_NO_DELETE_UNLESS_NAME_RESERVED/reserved", rule: "ENUM_VALUE_NO_DELETE_UNLESS_NAME_RESERVED",
			old: one(p3 + "enum E {\n  E_UNSPECIFIED = 0;\n  E_A = 1;\n}\n"),
			new: one(p3 + "enum E {\n  E_UNSPECIFIED = 0;\n  reserved \"E_A\";\n}\n")},

		{name: "FIELD_NO_DELETE_UNLESS_NAME_RESERVED/deleted", rule: "FIELD_NO_DELETE_UNLESS_NAME_RESERVED", breaks: true,
			old: one(p3 + "message M {\n  int32 a = 1;\n}\n"),
			new: one(p3 + "message M {\n  reserved 1;\n}\n")},
		{name: "FIELD_NO_DELETE_UNLESS_NAME_RESERVED/reserved", rule: "FIELD_NO_DELETE_UNLESS_NAME_RESERVED",
			old: one(p3 + "message M {\n  int32 a = 1;\n}\n"),
			new: one(p3 + "message M {\n  reserved \"a\";\n}\n")},

		{name: "FIELD_WIRE_JSON_COMPATIBLE_CARDINALITY/repeated", rule: "FIELD_WIRE_JSON_COMPATIBLE_CARDINALITY", breaks: true,
			old: one(p3 + "message M {\n  int32 a = 1;\n}\n"),
			new: one(p3 + "message M {\n  repeated int32 a = 1;\n}\n")},
		{name: "FIELD_WIRE_JSON_COMPATIBLE_CARDINALITY/optional", rule: "FIELD_WIRE_JSON_COMPATIBLE_CARDINALITY",
			old: one(p3 + "message M {\n  int32 a = 1;\n}\n"),
			new: one(p3 + "message M {\n  optional int32 a = 1;\n}\n")},

		{name: "FIELD_WIRE_JSON_COMPATIBLE_TYPE/sint", rule: "FIELD_WIRE_JSON_COMPATIBLE_TYPE", breaks: true,
			old: one(p3 + "message M {\n  int32 a = 1;\n  int64 b = 2;\n}\n"),
			new: one(p3 + "message M {\n  sint32 a = 1;\n  int32 b = 2;\n}\n")},
		{name: "FIELD_WIRE_JSON_COMPATIBLE_TYPE/enum", rule: "FIELD_WIRE_JSON_COMPATIBLE_TYPE", breaks: true,
			old: one(p3 + "message M {\n  E a = 1;\n  E b = 2;\n}\nenum E { E_UNSPECIFIED = 0; E_A = 1; }\nenum F { F_UNSPECIFIED = 0; }\nmessage N { enum E { E_UNSPECIFIED = 0; } }\n"),
			new: one(p3 + "message M {\n  F a = 1;\n  N.E b = 2;\n}\nenum E { E_UNSPECIFIED = 0; E_A = 1; }\nenum F { F_UNSPECIFIED = 0; }\nmessage N { enum E { E_UNSPECIFIED = 0; } }\n")},
		{name: "FIELD_WIRE_JSON_COMPATIBLE_TYPE/compatible", rule: "FIELD_WIRE_JSON_COMPATIBLE_TYPE",
			old: one(p3 + "message M {\n  int32 a = 1;\n  E b = 2;\n}\nenum E { E_UNSPECIFIED = 0; }\nmessage N { enum E { E_UNSPECIFIED = 0; } }\n"),
			new: one(p3 + "message M {\n  uint32 a = 1;\n  N.E b = 2;\n}\nenum E { E_UNSPECIFIED = 0; }\nmessage N { enum E { E_UNSPECIFIED = 0; E_X = 1; } }\n")},

		{name: "ENUM_VALUE_NO_DELETE_UNLESS_NUMBER_RESERVED/deleted", rule: "ENUM_VALUE_NO_DELETE_UNLESS_NUMBER_RESERVED", breaks: true,
			old: one(p3 + "enum E {\n  E_UNSPECIFIED = 0;\n  E_A = 1;\n}\n"),
			new: one(p3 + "enum E {\n  E_UNSPECIFIED = 0;\n  reserved \"E_A\";\n}\n")},
		{name: "ENUM_VALUE_NO_DELETE_UNLESS_NUMBER_RESERVED/reserved", rule: "ENUM_VALUE_NO_DELETE_UNLESS_NUMBER_RESERVED",
			old: one(p3 + "enum E {\n  E_UNSPECIFIED = 0;\n  E_A = 1;\n}\n"),
			new: one(p3 + "enum E {\n  E_UNSPECIFIED = 0;\n  reserved 1;\n}\n")},

		{name: "FIELD_NO_DELETE_UNLESS_NUMBER_RESERVED/deleted", rule: "FIELD_NO_DELETE_UNLESS_NUMBER_RESERVED", breaks: true,
			old: one(p3 + "message M {\n  int32 a = 1;\n}\n"),
			new: one(p3 + "message M {\n  reserved \"a\";\n}\n")},
		{name: "FIELD_NO_DELETE_UNLESS_NUMBER_RESERVED/reserved", rule: "FIELD_NO_DELETE_UNLESS_NUMBER_RESERVED",
			old: one(p3 + "message M {\n  int32 a = 1;\n}\n"),
			new: one(p3 + "message M {\n  reserved 1;\n}\n")},

		{name: "FIELD_WIRE_COMPATIBLE_CARDINALITY/repeated", rule: "FIELD_WIRE_COMPATIBLE_CARDINALITY", breaks: true,
			old: one(p3 + "message M {\n  string a = 1;\n}\n"),
			new: one(p3 + "message M {\n  repeated string a = 1;\n}\n")},
		{name: "FIELD_WIRE_COMPATIBLE_CARDINALITY/optional", rule: "FIELD_WIRE_COMPATIBLE_CARDINALITY",
			old: one(p3 + "message M {\n  optional string a = 1;\n}\n"),
			new: one(p3 + "message M {\n  string a = 1;\n}\n")},

		{name: "FIELD_WIRE_COMPATIBLE_TYPE/sint", rule: "FIELD_WIRE_COMPATIBLE_TYPE", breaks: true,
			old: one(p3 + "message M {\n  int32 a = 1;\n  bytes b = 2;\n  N c = 3;\n}\nmessage N {}\nmessage O {}\n"),
			new: one(p3 + "message M {\n  sint32 a = 1;\n  string b = 2;\n  O c = 3;\n}\nmessage N {}\nmessage O {}\n")},
		{name: "FIELD_WIRE_COMPATIBLE_TYPE/compatible", rule: "FIELD_WIRE_COMPATIBLE_TYPE",
			old: one(p3 + "message M {\n  int32 a = 1;\n  string b = 2;\n  bool c = 3;\n}\n"),
			new: one(p3 + "message M {\n  int64 a = 1;\n  bytes b = 2;\n  uint64 c = 3;\n}\n")},
	}
	cs = append(cs, fileOptionCases("FILE_SAME_CC_ENABLE_ARENAS", "", "option cc_enable_arenas = false;")...)
	cs = append(cs, fileOptionCases("FILE_SAME_CC_GENERIC_SERVICES", "", "option cc_generic_services = true;")...)
	cs = append(cs, fileOptionCases("FILE_SAME_CSHARP_NAMESPACE", "option csharp_namespace = \"A\";", "option csharp_namespace = \"B\";")...)
	cs = append(cs, fileOptionCases("FILE_SAME_GO_PACKAGE", "", "option go_package = \"example.com/a\";")...)
	cs = append(cs, fileOptionCases("FILE_SAME_JAVA_GENERIC_SERVICES", "option java_generic_services = true;", "")...)
	cs = append(cs, fileOptionCases("FILE_SAME_JAVA_MULTIPLE_FILES", "", "option java_multiple_files = true;")...)
	cs = append(cs, fileOptionCases("FILE_SAME_JAVA_OUTER_CLASSNAME", "option java_outer_classname = \"A\";", "option java_outer_classname = \"B\";")...)
	cs = append(cs, fileOptionCases("FILE_SAME_JAVA_PACKAGE", "option java_package = \"a\";", "")...)
	cs = append(cs, fileOptionCases("FILE_SAME_OBJC_CLASS_PREFIX", "", "option objc_class_prefix = \"ABC\";")...)
	cs = append(cs, fileOptionCases("FILE_SAME_OPTIMIZE_FOR", "option optimize_for = SPEED;", "option optimize_for = LITE_RUNTIME;")...)
	cs = append(cs, fileOptionCases("FILE_SAME_PHP_CLASS_PREFIX", "", "option php_class_prefix = \"A\";")...)
	cs = append(cs, fileOptionCases("FILE_SAME_PHP_METADATA_NAMESPACE", "", "option php_metadata_namespace = \"A\";")...)
	cs = append(cs, fileOptionCases("FILE_SAME_PHP_NAMESPACE", "", "option php_namespace = \"A\";")...)
	cs = append(cs, fileOptionCases("FILE_SAME_PY_GENERIC_SERVICES", "", "option py_generic_services = true;")...)
	cs = append(cs, fileOptionCases("FILE_SAME_RUBY_PACKAGE", "", "option ruby_package = \"A\";")...)
	cs = append(cs, fileOptionCases("FILE_SAME_SWIFT_PREFIX", "", "option swift_prefix = \"A\";")...)
	return cs
}()
