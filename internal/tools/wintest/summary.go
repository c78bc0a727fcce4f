package main

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// summary gathers the packages' results.
type summary struct {
	passed, failed, skipped int
	notOnWindows            []string
	skips                   []string
	unbuilt                 []string
	excludedPkgs            []string
	brokenPkgs              []string
	packages                int
}

func (s *summary) add(r result) {
	s.packages++
	s.passed += r.passed
	s.failed += r.failed
	s.skipped += len(r.skips) + len(r.notOnWindows)
	short := strings.TrimPrefix(r.pkg, "github.com/plugkit/plugkit/")
	for _, n := range r.notOnWindows {
		s.notOnWindows = append(s.notOnWindows, short+" "+n)
	}
	for _, n := range r.skips {
		s.skips = append(s.skips, short+" "+n)
	}
	if r.broken != "" {
		s.brokenPkgs = append(s.brokenPkgs, r.pkg+": "+r.broken)
	}
	status := "ok"
	if r.failed > 0 || r.broken != "" {
		status = "FAIL"
	}
	fmt.Printf("%-4s %s: %d passed, %d failed, %d skipped (%.1fs)\n", status, r.pkg, r.passed, r.failed, len(r.skips)+len(r.notOnWindows), r.elapsed.Seconds())
}

// print writes the summary.
func (s *summary) print(w io.Writer, took time.Duration) {
	section := func(title string, lines []string) {
		if len(lines) == 0 {
			return
		}
		fmt.Fprintf(w, "\n%s (%d):\n", title, len(lines))
		for _, l := range lines {
			fmt.Fprintf(w, "  %s\n", l)
		}
	}
	section("Packages not run on Windows, with the reason", s.excludedPkgs)
	section("Tests not built for Windows (build constraints), by file", s.unbuilt)
	section("Tests that do not apply to Windows (testutil.NotOnWindows), with the reason", s.notOnWindows)
	section("Tests skipped for other reasons", s.skips)
	section("Packages that failed beyond their tests", s.brokenPkgs)
	ran := s.passed + s.failed + s.skipped
	fmt.Fprintf(w, "\nUnder Wine (windows/amd64, no race detector): %d packages, %d tests and subtests ran: %d passed, %d failed, %d skipped; took %s.\n",
		s.packages, ran, s.passed, s.failed, s.skipped, took.Round(time.Second))
}
