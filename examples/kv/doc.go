// Package kv is the host side of the "kv" plugin kind of docs/your-own-kind.md:
// the v1->v2 adapter and the conformance suites.
package kv
