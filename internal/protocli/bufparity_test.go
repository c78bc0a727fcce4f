package protocli

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestBufParity runs each case of testdata/bufparity (small fixtures of
// the project's own; a case is a file NAME.args beside its inputs, so that
// one set of inputs serves several formats and flags) as buf v1.75.0 ran
// it, with --buf-compat --buf-names --except ADR044 (buf has no ADR044
// rules), and compares stdout and the exit status byte for byte with
// buf's, which record.sh recorded in NAME.out and NAME.code (issue 21).
func TestBufParity(t *testing.T) {
	cases, err := filepath.Glob(filepath.Join("testdata", "bufparity", "*", "*.args"))
	if err != nil || len(cases) == 0 {
		t.Fatalf("no cases: %v", err)
	}
	for _, argsFile := range cases {
		dir := filepath.Dir(argsFile)
		name := strings.TrimSuffix(filepath.Base(argsFile), ".args")
		t.Run(filepath.Base(dir)+"/"+name, func(t *testing.T) {
			args := strings.Fields(string(must(os.ReadFile(argsFile))))
			want := string(must(os.ReadFile(filepath.Join(dir, name+".out"))))
			wantCode, err := strconv.Atoi(strings.TrimSpace(string(must(os.ReadFile(filepath.Join(dir, name+".code"))))))
			if err != nil {
				t.Fatal(err)
			}
			t.Chdir(dir)
			code, got, stderr := run(t, append(append([]string{"breaking"}, args...), "--buf-compat", "--buf-names", "--except", "ADR044")...)
			if got != want || code != wantCode {
				t.Errorf("plugkit-proto breaking %s: exit %d, stdout:\n%s\nwant exit %d, buf's stdout:\n%s\nstderr: %s",
					strings.Join(args, " "), code, got, wantCode, want, stderr)
			}
		})
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
