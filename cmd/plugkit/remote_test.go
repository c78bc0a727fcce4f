package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/plugkit/plugkit/catalog"
	"github.com/plugkit/plugkit/examples/objectstore"
	"github.com/plugkit/plugkit/examples/objectstore/backend"
	objectstorev1 "github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v1"
	"github.com/plugkit/plugkit/internal/remotetest"
	"github.com/plugkit/plugkit/internal/testutil"
	"github.com/plugkit/plugkit/plugin"
	"github.com/plugkit/plugkit/wire"
)

func TestConnectToAPluginService(t *testing.T) {
	t.Parallel()
	pki, err := remotetest.NewPKI(testutil.TempDir(t), "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	mem := backend.NewMemory()
	mem.Put("k", []byte("hi"))
	cat, err := catalog.New("1.3.0",
		catalog.Implement[objectstorev1.ObjectStoreServer](objectstore.Kind, 1, 0, "example.com/memory",
			&objectstorev1.ObjectStore_ServiceDesc, backend.V1{B: mem}))
	if err != nil {
		t.Fatal(err)
	}
	addr, _ := remotetest.Start(t, pki.ServiceEnv("127.0.0.1:0"), "", plugin.Config{Versions: map[int]plugin.Register{wire.CatalogProtocolVersion: cat.Register}})
	tlsArgs := []string{"--connect", addr, "--tls-ca", pki.CAFile, "--tls-cert", pki.HostCert, "--tls-key", pki.HostKey}

	var stdout, stderr bytes.Buffer
	if code := run(append([]string{"inspect", "--json"}, tlsArgs...), &stdout, &stderr); code != 0 {
		t.Fatalf("inspect --connect: exit %d: %s", code, stderr.String())
	}
	var ins inspection
	if err := json.Unmarshal(stdout.Bytes(), &ins); err != nil {
		t.Fatal(err)
	}
	if ins.ProtocolVersion != wire.CatalogProtocolVersion || ins.Address != addr || !ins.TLS || !contains(ins.Services, "objectstore.v1.ObjectStore") || !contains(ins.Services, "plugkit.catalog.v1.Catalog") {
		t.Fatalf("inspect --connect: %+v", ins)
	}

	stdout.Reset()
	if code := run(append(append([]string{"call", "--compact"}, tlsArgs...), "--name", "example.com/memory", "objectstore.v1.ObjectStore/Get", `{"key":"k"}`), &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), `"aGk="`) {
		t.Fatalf("call --connect Get: exit %d: %s %s", code, stdout.String(), stderr.String())
	}

	stdout.Reset()
	if code := run(append([]string{"plugins", "list"}, tlsArgs...), &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "example.com/memory") || !strings.Contains(stdout.String(), "objectstore  1.0") {
		t.Fatalf("plugins list --connect: exit %d:\n%s%s", code, stdout.String(), stderr.String())
	}

	// Without the host's certificate: a clear refusal, exit 2.
	stderr.Reset()
	if code := run([]string{"inspect", "--connect", addr, "--tls-ca", pki.CAFile}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "--tls-cert") {
		t.Fatalf("inspect --connect without a certificate: exit %d: %s", code, stderr.String())
	}
	// A certificate of another CA: refused by the service, exit 1.
	stderr.Reset()
	if code := run([]string{"inspect", "--connect", addr, "--timeout", "2s", "--tls-ca", pki.CAFile, "--tls-cert", pki.ForeignCert, "--tls-key", pki.ForeignKey}, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), "PLUGKIT_TLS_CLIENT_CA") {
		t.Fatalf("inspect --connect with a foreign certificate: exit %d: %s", code, stderr.String())
	}
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
