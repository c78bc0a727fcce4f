package host

import (
	"testing"
	"unicode"
)

// TestMustEscapeMatchesUnicode: the fast rune test escapes exactly the
// control characters but tab, the line and paragraph separators and
// unicode.Bidi_Control, over every rune.
func TestMustEscapeMatchesUnicode(t *testing.T) {
	for r := rune(0); r <= unicode.MaxRune; r++ {
		want := r != '\t' && unicode.IsControl(r) || r == '\u2028' || r == '\u2029' || unicode.Is(unicode.Bidi_Control, r)
		if mustEscape(r) != want {
			t.Fatalf("%U: %v want %v", r, mustEscape(r), want)
		}
		if needsEscape(string(r)) != want && r != 0xFFFD && (r < 0xD800 || r > 0xDFFF) {
			t.Fatalf("needsEscape %U", r)
		}
	}
}
