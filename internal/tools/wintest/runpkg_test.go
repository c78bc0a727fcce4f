package main

import (
	"errors"
	"strings"
	"testing"
)

// TestCutShortPackageFails: a binary whose output stops before the
// package's own result (killed at its -test.timeout, crashed) leaves the
// package broken, however many tests passed before; a binary that
// reported its result and exited 0 leaves it passed; one that exited
// non-zero with no test failed is broken too.
func TestCutShortPackageFails(t *testing.T) {
	const twoPassed = `{"Action":"run","Test":"TestA"}
{"Action":"pass","Test":"TestA"}
{"Action":"run","Test":"TestB"}
{"Action":"pass","Test":"TestB"}
{"Action":"run","Test":"TestC"}
`
	cases := []struct {
		name    string
		stream  string
		waitErr error
		broken  bool
	}{
		{"cut short", twoPassed, nil, true},
		{"cut short, exit status", twoPassed, errors.New("exit status 2"), true},
		{"whole", twoPassed + `{"Action":"pass","Test":"TestC"}` + "\n" + `{"Action":"pass"}` + "\n", nil, false},
		{"whole, exit status", twoPassed + `{"Action":"pass","Test":"TestC"}` + "\n" + `{"Action":"pass"}` + "\n", errors.New("exit status 1"), true},
	}
	for _, c := range cases {
		var res result
		ended := res.read(config{}, strings.NewReader(c.stream))
		res.checkEnd(ended, c.waitErr)
		if got := res.broken != ""; got != c.broken {
			t.Errorf("%s: broken %q (passed %d), want broken %v", c.name, res.broken, res.passed, c.broken)
		}
	}
}
