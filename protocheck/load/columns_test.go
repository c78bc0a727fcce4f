package load

import "testing"

// The compiler's columns (runes, tab stops of 8) become buf's (terminal
// cells, tab stops of 4): a line indented with two tabs starts at column 9
// in buf, not 17 (issue 21).
func TestBufColumns(t *testing.T) {
	f := &File{Path: "a.proto", Source: []byte("a\n\t\tint32 x = 1;\n  \tint32 y = 2;\n/*貓貓貓*/\tint32 z = 3;\nplain\n")}
	cases := []struct{ line, col, want int }{
		{2, 17, 9},  // two tabs
		{2, 22, 14}, // end of "int32"
		{3, 9, 5},   // two spaces and a tab
		{4, 9, 13},  // wide characters (two cells each), then a tab
		{5, 3, 3},   // plain ASCII is left alone
		{9, 4, 4},   // no such line
	}
	var cf columnFixer
	for _, c := range cases {
		if got := cf.column(f, c.line, c.col); got != c.want {
			t.Errorf("line %d column %d: got %d, want %d", c.line, c.col, got, c.want)
		}
	}
}
