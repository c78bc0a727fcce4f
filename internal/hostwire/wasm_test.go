package hostwire_test

import (
	"testing"

	"github.com/plugkit/plugkit/internal/hostwire"
)

func TestIsWasmModule(t *testing.T) {
	for in, want := range map[string]bool{
		"\x00asm\x01\x00\x00\x00": true,
		"\x00asm":                 true,
		"\x00as":                  false,
		"":                        false,
		"\x7fELF\x02\x01":         false,
		"#!/bin/sh\n":             false,
	} {
		if got := hostwire.IsWasmModule([]byte(in)); got != want {
			t.Errorf("IsWasmModule(%q) = %v, want %v", in, got, want)
		}
	}
	if hostwire.WasmMagicLen != 4 {
		t.Errorf("WasmMagicLen = %d, want the 4 bytes of \\0asm", hostwire.WasmMagicLen)
	}
}
