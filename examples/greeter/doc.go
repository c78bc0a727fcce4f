// Package greeter is the host side of the "greeter" plugin kind that
// docs/your-own-kind.md builds: its v1->v2 adapter (protocol in proto/,
// generated code in gen/, plugins hello and polyglot in plugins/).
package greeter
