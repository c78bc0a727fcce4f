package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestProtoBufYAMLCLI runs "plugkit proto breaking --buf-compat --buf-names"
// on inputs configured by a v2 buf.yaml and by a v1 buf.work.yaml, in the
// fixture's directory as buf was run, and compares text and JSON output
// byte for byte with what buf v1.75.0 printed there (paths of files in
// module directories, ignores, except, per-module rules, order).
func TestProtoBufYAMLCLI(t *testing.T) {
	for _, version := range []string{"v2", "v1"} {
		dir, err := filepath.Abs(filepath.Join("..", "..", "protocheck", "testdata", "bufcfg", version))
		if err != nil {
			t.Fatal(err)
		}
		t.Run(version, func(t *testing.T) {
			t.Chdir(dir)
			for format, file := range map[string]string{"text": "buf-expected.txt", "json": "buf-expected.jsonl"} {
				want, err := os.ReadFile(file)
				if err != nil {
					t.Fatal(err)
				}
				code, out, errs := runCLI("proto", "breaking", "current", "--against", "previous", "--buf-compat", "--buf-names", "--error-format", format)
				if code != 100 {
					t.Fatalf("%s: exit %d, want 100; stderr %s", format, code, errs)
				}
				if out != string(want) {
					t.Errorf("%s output differs from buf's\ngot:\n%s\nwant:\n%s", format, out, want)
				}
			}
			// --use replaces the file's rules: PACKAGE_NO_DELETE alone
			// finds nothing here.
			if code, out, errs := runCLI("proto", "breaking", "current", "--against", "previous", "--use", "PACKAGE_NO_DELETE"); code != 0 || out != "" {
				t.Errorf("--use PACKAGE_NO_DELETE: exit %d, output %q, stderr %q", code, out, errs)
			}
		})
	}
}
