package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/term"
)

// progressMin is the smallest download plugkit install draws a progress
// bar for: smaller ones end before a bar would help.
const progressMin = 4 << 20

// progressWidth is the bar's width in cells.
const progressWidth = 30

// downloadProgress is release.Target.Progress for install's messages to
// w: a progress bar, redrawn in place, for a download of progressMin
// bytes or more when w is a terminal; nothing when it is not (a log or a
// pipe stays quiet and line-oriented) or the download is small.
func downloadProgress(w io.Writer) func(name string, size int64) io.WriteCloser {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	return func(name string, size int64) io.WriteCloser {
		if size < progressMin {
			return nil
		}
		b := &progressBar{w: w, name: name, size: size, drawn: -1}
		b.draw()
		return b
	}
}

// progressBar draws a download's progress on a terminal, on one line it
// redraws with a carriage return each time a cell of the bar fills.
type progressBar struct {
	w     io.Writer
	name  string
	size  int64
	done  int64
	drawn int // the cells filled when last drawn
}

// Write counts the bytes downloaded.
func (b *progressBar) Write(p []byte) (int, error) {
	b.done += int64(len(p))
	if b.cells() != b.drawn {
		b.draw()
	}
	return len(p), nil
}

// Close ends the bar's line, saying how far the download got when it
// stopped short.
func (b *progressBar) Close() error {
	if b.done < b.size {
		fmt.Fprintf(b.w, " (stopped at %s)", mib(b.done))
	}
	fmt.Fprintln(b.w)
	return nil
}

func (b *progressBar) cells() int {
	return int(min(b.done, b.size) * progressWidth / b.size)
}

func (b *progressBar) draw() {
	b.drawn = b.cells()
	fmt.Fprintf(b.w, "\rdownloading %s [%s%s] %s / %s %3d%%", b.name,
		strings.Repeat("#", b.drawn), strings.Repeat(".", progressWidth-b.drawn),
		mib(b.done), mib(b.size), min(b.done, b.size)*100/b.size)
}

// mib is n bytes in MiB, one decimal.
func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
