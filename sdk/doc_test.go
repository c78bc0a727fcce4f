package sdk_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/plugkit/plugkit/automtls"
	"github.com/plugkit/plugkit/examples/objectstore"
	catalogv1 "github.com/plugkit/plugkit/gen/plugkit/catalog/v1"
	"github.com/plugkit/plugkit/handshake"
	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/goplugin/pluginpb"
	"github.com/plugkit/plugkit/internal/hostwire"
	"github.com/plugkit/plugkit/internal/listen"
	"github.com/plugkit/plugkit/wire"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectionv1 "google.golang.org/grpc/reflection/grpc_reflection_v1"
)

// snippet is a fenced block preceded by a "<!-- from: PATH -->" marker: it
// must appear, verbatim, in PATH.
var snippet = regexp.MustCompile("(?s)<!-- from: (\\S+) -->\n```[a-z]*\n(.*?)```")

const docPath = "docs/other-languages.md"

func readDoc(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", docPath))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestOtherLanguagesDocMatchesCode keeps docs/other-languages.md, the
// contract of a plugin in any language, true to the Go code: every quoted
// excerpt is cut from its file as it is now, and every variable, service,
// method, metadata key and message the page names is the one the code
// uses.
func TestOtherLanguagesDocMatchesCode(t *testing.T) {
	doc := readDoc(t)
	matches := snippet.FindAllStringSubmatch(doc, -1)
	if len(matches) < 5 {
		t.Fatalf("found %d marked excerpts in %s; the page has more", len(matches), docPath)
	}
	for _, m := range matches {
		path, text := m[1], m[2]
		src, err := os.ReadFile(filepath.Join("..", path))
		if err != nil {
			t.Errorf("excerpt from %s: %v", path, err)
			continue
		}
		if !strings.Contains(string(src), text) {
			t.Errorf("%s quotes %s, but the file no longer holds:\n%s", docPath, path, text)
		}
	}

	exampleLine := handshake.Line{CoreVersion: handshake.CoreVersion, AppVersion: wire.CatalogProtocolVersion, Network: "unix", Address: "/tmp/plugkit-123/plugin-4/plugin.sock", Protocol: handshake.ProtocolGRPC}
	timeoutErr := startSilent(t)
	want := map[string]string{
		"the cookie notice":                   (&handshake.CookieError{Key: objectstore.Cookie.Key}).Error(),
		"the objectstore cookie":              objectstore.Cookie.Key + "=" + objectstore.Cookie.Value,
		"the versions variable":               "`" + handshake.EnvProtocolVersions + "`",
		"the socket directory variable":       "`" + handshake.EnvUnixSocketDir + "`",
		"the host certificate variable":       "`" + handshake.EnvClientCert + "`",
		"the socket group variable":           "`" + handshake.EnvUnixSocketGroup + "`",
		"the multiplexing variable":           "`" + handshake.EnvMultiplexGRPC + "`",
		"the network variable":                "`" + handshake.EnvNetwork + "=tcp`",
		"the port range":                      "`" + handshake.EnvMinPort + "`, `" + handshake.EnvMaxPort + "`",
		"the describe variable":               "`" + handshake.EnvDescribe + "=1`",
		"the describe line":                   handshake.DescribePrefix + "<payload>",
		"the describe line's bound":           strconv.Itoa(handshake.MaxDescribeLine>>10) + " KiB",
		"the catalog's protocol version":      "app protocol version **" + strconv.Itoa(wire.CatalogProtocolVersion) + "**",
		"the plugin's no-version log record":  "no app protocol version in common with the host",
		"the record's fields":                 "`plugin_versions` (yours, as a JSON array), `host_versions`",
		"the socket path limit":               strconv.Itoa(listen.MaxUnixPath) + " bytes",
		"an example line":                     strings.TrimSuffix(exampleLine.String(), "|") + "|MIIB...",
		"the handshake timeout's text":        timeoutErr,
		"the certificate's name":              "`" + automtls.ServerName + "`",
		"Describe":                            "`" + catalogv1.Catalog_Describe_FullMethodName + "`",
		"the routing key":                     "`" + wire.NameKey + "`",
		"the health check":                    "`" + healthpb.Health_Check_FullMethodName + "` for the service `" + wire.HealthService + "`",
		"Shutdown":                            "`" + pluginpb.GRPCController_Shutdown_FullMethodName + "`",
		"stdio":                               "`" + pluginpb.GRPCStdio_StreamStdio_FullMethodName + "`",
		"the broker":                          "`" + pluginpb.GRPCBroker_StartStream_FullMethodName + "`",
		"reflection":                          "`" + strings.Split(reflectionv1.ServerReflection_ServerReflectionInfo_FullMethodName, "/")[1] + "`",
		"the stop timeout":                    hostwire.DefaultStopTimeout.String() + " each by default",
		"the start timeout in the doc's text": "after its start timeout (" + hostwire.DefaultStartTimeout.String() + " by default)",
		"the parent poll":                     "every 100 ms",
	}
	for what, text := range want {
		if !strings.Contains(doc, text) {
			t.Errorf("%s does not give %s as the code has it: %q", docPath, what, text)
		}
	}
}

// startSilent starts a program that never prints its handshake line (this
// test binary, which sleeps when it finds the cookie: see TestMain) and
// returns the host's error for it, with the doc's 30 s start timeout
// written in place of the short one the test waits.
func startSilent(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	_, err = host.Start(t.Context(), host.Command{
		Path: self, Cookie: objectstore.Cookie,
		Timeouts: host.Timeouts{Start: 200 * time.Millisecond, Stop: 100 * time.Millisecond},
	}, host.Options{Versions: []int{1}})
	if err == nil {
		t.Fatal("a program that prints nothing started")
	}
	msg := err.Error()
	i := strings.Index(msg, "no complete handshake line within ")
	if i < 0 {
		t.Fatalf("unexpected error from a silent plugin: %v", err)
	}
	return strings.Replace(msg[i:], "within 200ms", "within "+hostwire.DefaultStartTimeout.String(), 1)
}

// TestMain makes this test binary the silent plugin of startSilent when
// the host started it (the kind's cookie is set): it sleeps, printing
// nothing, until the host kills it (at most a minute).
func TestMain(m *testing.M) {
	if os.Getenv(objectstore.Cookie.Key) == objectstore.Cookie.Value {
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestSDKsReadTheContractsVariables: each SDK reads the variables the
// contract makes it read, by the names the Go host sets, and serves the
// services the contract names.
func TestSDKsReadTheContractsVariables(t *testing.T) {
	sdks := map[string][]string{
		"python": {"python/plugkit/_serve.py", "python/plugkit/_services.py", "python/plugkit/_catalog.py"},
		"node":   {"node/lib/serve.js", "node/lib/catalog.js"},
	}
	names := []string{
		handshake.EnvProtocolVersions, handshake.EnvClientCert, handshake.EnvUnixSocketDir,
		handshake.EnvUnixSocketGroup, handshake.EnvNetwork,
		wire.NameKey, wire.HealthService, "plugkit.catalog.v1.Catalog",
		"plugin.GRPCController", "plugin.GRPCBroker", "plugin.GRPCStdio", "grpc.health.v1.Health",
		"grpc.reflection.v1", "grpc.reflection.v1alpha",
		"no app protocol version in common with the host",
	}
	for sdk, files := range sdks {
		var src strings.Builder
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			src.Write(b)
		}
		for _, n := range names {
			if !strings.Contains(src.String(), `"`+n) && !strings.Contains(src.String(), `'`+n) {
				t.Errorf("the %s SDK never names %q", sdk, n)
			}
		}
		// The socket path limit is the Go side's (the page gives it too).
		if limit := "MAX_UNIX_PATH = " + strconv.Itoa(listen.MaxUnixPath); !strings.Contains(src.String(), limit) {
			t.Errorf("the %s SDK does not say %q, the limit of internal/listen", sdk, limit)
		}
	}
}
