package kindgen

import (
	"context"
	"go/format"
	"io"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/bufbuild/protocompile"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// compile compiles in-memory .proto files with their comments.
func compile(t *testing.T, sources map[string]string) []protoreflect.FileDescriptor {
	t.Helper()
	var names []string
	for name := range sources {
		names = append(names, name)
	}
	c := protocompile.Compiler{
		Resolver:       protocompile.WithStandardImports(&protocompile.SourceResolver{Accessor: protocompile.SourceAccessorFromMap(sources)}),
		SourceInfoMode: protocompile.SourceInfoStandard,
	}
	slices.Sort(names)
	files, err := c.Compile(context.Background(), names...)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]protoreflect.FileDescriptor, len(files))
	for i, f := range files {
		out[i] = f
	}
	return out
}

// TestErrorsDoNotDependOnFileOrder gives the generator two packages that
// claim one major, in both orders: the error must read the same (protoc
// passes files in the order of its command line).
func TestErrorsDoNotDependOnFileOrder(t *testing.T) {
	files := compile(t, map[string]string{"a.proto": kv("acme.kv.v1", "", ""), "b.proto": kv("other.kv.v1", "", "")})
	_, inOrder := Files(files, "")
	_, reversed := Files([]protoreflect.FileDescriptor{files[1], files[0]}, "")
	if inOrder == nil || reversed == nil || inOrder.Error() != reversed.Error() {
		t.Errorf("files in name order: %v; reversed: %v; want one error", inOrder, reversed)
	}
}

// kv builds a kv.v1 file: dirs above the package statement, then an RPC
// with the given comment.
func kv(pkg, dirs, rpcComment string) string {
	return "syntax = \"proto3\";\n" + dirs + "package " + pkg + ";\n" +
		"option go_package = \"example.com/kv/gen/" + strings.ReplaceAll(pkg, ".", "/") + "\";\n" +
		"message Req {}\nmessage Res {}\n" +
		"service KV {\n" + rpcComment + "  rpc Get(Req) returns (Res);\n}\n"
}

// TestBadInputIsAnErrorWithPosition feeds the generator each kind of bad
// input the issue lists: each must be an error naming file:line and what
// to do, and no file may be generated.
func TestBadInputIsAnErrorWithPosition(t *testing.T) {
	for _, tc := range []struct {
		name    string
		sources map[string]string
		want    []string
	}{
		{"package without a kind", map[string]string{"a.proto": kv("kvstore", "", "")},
			[]string{"a.proto:2:", "package kvstore declares no kind", "<kind>.v<major>"}},
		{"package with a major but no kind", map[string]string{"a.proto": kv("v1", "", "")},
			[]string{"a.proto:2:", "package v1 declares no kind", "plugkit: kind NAME"}},
		{"two packages claiming one major", map[string]string{"a.proto": kv("acme.kv.v1", "", ""), "b.proto": kv("other.kv.v1", "", "")},
			[]string{"b.proto:2:", "acme.kv.v1 (a.proto:2) and other.kv.v1 both claim kv v1"}},
		{"Since naming another kind", map[string]string{"a.proto": kv("kv.v1", "// plugkit: minor 1.1 ttl\n", "  // Since: store 1.1\n")},
			[]string{"a.proto:9:", `"Since: store 1.1" names "store", but package kv.v1 is kind "kv"`}},
		{"Since with an unparseable version", map[string]string{"a.proto": kv("kv.v1", "// plugkit: minor 1.1 ttl\n", "  // Since: kv one.1\n")},
			[]string{"a.proto:9:", `"one.1" is not a version`}},
		{"Since naming another major", map[string]string{"a.proto": kv("kv.v1", "// plugkit: minor 1.1 ttl\n", "  // Since: kv 2.1\n")},
			[]string{"a.proto:9:", "names no version of kv v1"}},
		{"minor gap", map[string]string{"a.proto": kv("kv.v1", "// plugkit: minor 1.1 ttl\n// plugkit: minor 1.3 scan\n", "")},
			[]string{"a.proto:4:", "minor 1.3 is declared, but 1.2 is not"}},
		{"RPC newer than the newest minor", map[string]string{"a.proto": kv("kv.v1", "// plugkit: minor 1.1 ttl\n", "  // Since: kv 1.2\n")},
			[]string{"a.proto:9:", "newer than kv v1's newest minor, 1.1", "plugkit: minor 1.2 CAPABILITY"}},
		{"two services", map[string]string{"a.proto": kv("kv.v1", "", "") + "service Other {}\n"},
			[]string{"a.proto:9:", "second service, Other"}},
		{"unknown directive", map[string]string{"a.proto": kv("kv.v1", "// plugkit: kinds kv\n", "")},
			[]string{"a.proto:3:", `unknown directive "kinds kv"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files, err := Files(compile(t, tc.sources), "")
			if err == nil {
				t.Fatalf("no error; generated %d files", len(files))
			}
			if files != nil {
				t.Errorf("generated %d files along with the error", len(files))
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
		})
	}
}

// twoMajors is a kind whose v2 keeps Get, changes Put's request, adds
// Delete in 2.0 and a server-streaming List in 2.1.
var twoMajors = map[string]string{
	"kv/v1/kv.proto": `syntax = "proto3";
// plugkit: cookie KV_PLUGIN k1
package kv.v1;
option go_package = "example.com/kv/gen/kv/v1;kvv1";
message GetRequest { string key = 1; }
message GetResponse { bytes value = 1; }
message PutRequest { string key = 1; bytes value = 2; }
message PutResponse {}
service KV {
  rpc Get(GetRequest) returns (GetResponse);
  rpc Put(PutRequest) returns (PutResponse);
}
`,
	"kv/v2/kv.proto": `syntax = "proto3";
// plugkit: minor 2.1 list
package kv.v2;
option go_package = "example.com/kv/gen/kv/v2;kvv2";
message GetRequest { string key = 1; }
message GetResponse { bytes value = 1; }
message PutRequest {
  string key = 1;
  bytes value = 2;
  // Since: kv 2.1
  int64 ttl = 3;
}
message PutResponse {}
message DeleteRequest { string key = 1; }
message DeleteResponse {}
message ListRequest {}
message ListResponse { string key = 1; }
service KV {
  rpc Get(GetRequest) returns (GetResponse);
  rpc Put(PutRequest) returns (PutResponse);
  rpc Delete(DeleteRequest) returns (DeleteResponse);
  // Since: kv 2.1
  rpc List(ListRequest) returns (stream ListResponse);
}
`,
}

// TestForwardingFollowsTheProtocol checks which RPCs the v1->v2 adapter
// gets: Get (unchanged) forwarded, Delete and List (new) refused, Put
// (changed) left to the author with a PutV1 helper, List and Put's ttl
// checked against minor 2.1; and that the output is gofmt'd and the same on every run.
func TestForwardingFollowsTheProtocol(t *testing.T) {
	files, err := Files(compile(t, twoMajors), "module=example.com/kv")
	if err != nil {
		t.Fatal(err)
	}
	v2 := files["gen/kv/v2/kv_plugkit.pb.go"]
	for _, want := range []string{
		"func (f V1Forward) Get(", "v1.KV_Get_FullMethodName",
		"func (f V1Forward) Delete(", "func (f V1Forward) List(",
		"func (f V1Forward) PutV1(ctx context.Context, in *v1.PutRequest",
		`c.Require(1, "List")`, "func (c *Client) ListAll(", `c.Require(1, "Put with ttl")`, `const CapList = "list"`,
		`var Cookie = handshake.Cookie{Key: "KV_PLUGIN", Value: "k1"}`,
	} {
		if !strings.Contains(v2, want) {
			t.Errorf("kv v2's generated code lacks %q", want)
		}
	}
	if strings.Contains(v2, "func (f V1Forward) Put(") {
		t.Error("the adapter's Put is generated, but Put's request changed: it is the author's to write")
	}
	again, err := Files(compile(t, twoMajors), "module=example.com/kv")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 4 {
		t.Errorf("generated %d files, want 4 (host and plugin side of two majors)", len(files))
	}
	for name, content := range files {
		if formatted, err := format.Source([]byte(content)); err != nil || string(formatted) != content {
			t.Errorf("%s is not gofmt'd (%v)", name, err)
		}
		if again[name] != content {
			t.Errorf("%s differs between two runs", name)
		}
	}
}

// captureStderr returns what f writes to os.Stderr.
func captureStderr(t *testing.T, f func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stderr
	os.Stderr = w
	done := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(r)
		done <- b
	}()
	func() {
		defer func() { os.Stderr = saved }()
		f()
	}()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return string(<-done)
}

// TestKindWithoutCookieIsWarned: a kind whose .proto files declare no
// cookie gets no Cookie constant; the generator must say so on stderr,
// naming the file and the line to add, and still generate. A kind with a
// cookie gets no warning.
func TestKindWithoutCookieIsWarned(t *testing.T) {
	var files map[string]string
	var err error
	out := captureStderr(t, func() { files, err = Files(compile(t, map[string]string{"a.proto": kv("kv.v1", "", "")}), "") })
	if err != nil || len(files) == 0 {
		t.Fatalf("Files = %d files, %v; want the kind generated despite the warning", len(files), err)
	}
	for _, want := range []string{"a.proto:2:", "kv", "no Cookie", `"// plugkit: cookie KV_PLUGIN VALUE"`} {
		if !strings.Contains(out, want) {
			t.Errorf("stderr %q lacks %q", out, want)
		}
	}
	out = captureStderr(t, func() { _, err = Files(compile(t, twoMajors), "module=example.com/kv") })
	if err != nil || out != "" {
		t.Errorf("a kind with a cookie: stderr %q, error %v; want neither", out, err)
	}
}

// TestRenameLeavesNewRPCsToTheAuthor renames v2's Get to Fetch: v1 then
// has an RPC v2 lacks, so every RPC of v2.0 that v1 lacks (Fetch, Delete)
// may be it renamed and is left to the adapter's author, while List, of
// minor 2.1, cannot be a rename and is still refused.
func TestRenameLeavesNewRPCsToTheAuthor(t *testing.T) {
	renamed := map[string]string{
		"kv/v1/kv.proto": twoMajors["kv/v1/kv.proto"],
		"kv/v2/kv.proto": strings.Replace(twoMajors["kv/v2/kv.proto"], "rpc Get(", "rpc Fetch(", 1),
	}
	files, err := Files(compile(t, renamed), "module=example.com/kv")
	if err != nil {
		t.Fatal(err)
	}
	v2 := files["gen/kv/v2/kv_plugkit.pb.go"]
	for _, absent := range []string{"func (f V1Forward) Fetch(", "func (f V1Forward) Delete("} {
		if strings.Contains(v2, absent) {
			t.Errorf("%s is generated; v1 lost Get, so it may be Get renamed: it is the author's to write", absent)
		}
	}
	for _, want := range []string{"func (f V1Forward) List(", "changed (Fetch, Put and Delete)", "v2 lacks v1's Get"} {
		if !strings.Contains(v2, want) {
			t.Errorf("kv v2's generated code lacks %q", want)
		}
	}
}
