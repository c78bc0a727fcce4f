package load

import (
	"strings"
	"unicode/utf8"

	"github.com/rivo/uniseg"

	"github.com/plugkit/plugkit/protocheck/report"
)

// bufTabstop is the width of a tab stop in buf's columns.
const bufTabstop = 4

// The compiler counts columns in runes and advances a tab to the next
// multiple of 8; buf (v1.75) counts terminal cells (a wide character such
// as 貓 is two, a grapheme cluster such as e plus a combining accent is
// one) and advances a tab to the next multiple of 4. columnFixer turns the
// compiler's columns into buf's, reading each line of the file's source.
type columnFixer struct {
	lines map[string][]int // file path to the offsets where its lines start
}

// BufColumns rewrites the columns of findings about files of img, which
// rules compute from the compiler's source positions, into buf's. Findings
// about other files are left as they are.
func (img *Image) BufColumns(findings []report.Finding) {
	var cf columnFixer
	for i := range findings {
		f := &findings[i]
		file := img.File(f.Path)
		if file == nil {
			continue
		}
		f.StartColumn = cf.column(file, f.StartLine, f.StartColumn)
		f.EndColumn = cf.column(file, f.EndLine, f.EndColumn)
	}
}

// line returns the text of the 1-based line n of file, without its end.
func (cf *columnFixer) line(file *File, n int) ([]byte, bool) {
	if cf.lines == nil {
		cf.lines = map[string][]int{}
	}
	starts, ok := cf.lines[file.Path]
	if !ok {
		starts = []int{0}
		for i, b := range file.Source {
			if b == '\n' {
				starts = append(starts, i+1)
			}
		}
		cf.lines[file.Path] = starts
	}
	if n < 1 || n > len(starts) {
		return nil, false
	}
	end := len(file.Source)
	if n < len(starts) {
		end = starts[n] - 1
	}
	return file.Source[starts[n-1]:end], true
}

// column converts the compiler's 1-based column col on line n into buf's.
func (cf *columnFixer) column(file *File, n, col int) int {
	text, off, ok := cf.offset(file, n, col)
	if !ok {
		return col
	}
	return bufColumn(text[:off])
}

// byteColumn converts the compiler's 1-based column col on line n into a
// 1-based byte column, which buf uses for compile errors.
func (cf *columnFixer) byteColumn(file *File, n, col int) int {
	_, off, ok := cf.offset(file, n, col)
	if !ok {
		return col
	}
	return off + 1
}

// offset returns line n of file and the byte offset in it of the
// compiler's column col; ok is false when the column needs no conversion
// (a line of plain ASCII) or cannot be placed.
func (cf *columnFixer) offset(file *File, n, col int) (text []byte, off int, ok bool) {
	text, ok = cf.line(file, n)
	if !ok || col < 1 || plainASCII(text) {
		return nil, 0, false
	}
	off, ok = compilerOffset(text, col)
	return text, off, ok
}

// plainASCII reports whether text has neither tabs nor non-ASCII bytes,
// where both ways of counting agree.
func plainASCII(text []byte) bool {
	for _, b := range text {
		if b == '\t' || b >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// compilerOffset finds the byte offset in text of the compiler's 1-based
// column col: the first rune boundary at which the compiler's count (runes,
// tab stops every 8) reaches col-1.
func compilerOffset(text []byte, col int) (int, bool) {
	c := 0
	for i := 0; i <= len(text); i++ {
		if c == col-1 && (i == len(text) || utf8.RuneStart(text[i])) {
			return i, true
		}
		if i == len(text) || c >= col {
			break
		}
		if text[i] == '\t' {
			c += 8 - c%8
		} else if utf8.RuneStart(text[i]) {
			c++
		}
	}
	return 0, false
}

// bufColumn is the 1-based column buf gives the position after prefix.
func bufColumn(prefix []byte) int {
	c := 0
	for i, seg := range strings.Split(string(prefix), "\t") {
		if i > 0 {
			c += bufTabstop - c%bufTabstop
		}
		c += uniseg.StringWidth(seg)
	}
	return c + 1
}
