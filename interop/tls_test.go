package interop_test

// Issue 11 row 1, your own TLS, against go-plugin v1.8.0 both ways: a
// go-plugin host with ClientConfig.TLSConfig loads a plugkit plugin with
// plugin.Config.TLSProvider, and a plugkit host with host.TLS loads
// a go-plugin plugin with ServeConfig.TLSProvider. On the wire go-plugin
// then sends no certificate in the handshake line and sets no
// PLUGIN_CLIENT_CERT; both sides use the configuration as given, for the
// connection and for the broker.

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	hclog "github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	objectstorev1 "github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v1"
	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/testpki"
	"github.com/plugkit/plugkit/internal/testutil"
)

// tlsDirEnv names the directory of PEM files a TLS child reads.
const tlsDirEnv = "PKTEST_TLS_DIR"

// pluginServerName is the name in the plugin's certificate.
const pluginServerName = "plugin.interop.test"

// ownTLSFromEnv is a TLSProvider: the plugin's certificate, requiring a
// host certificate signed by the same CA. It works as a client
// configuration too, for the broker.
func ownTLSFromEnv() (*tls.Config, error) {
	dir := os.Getenv(tlsDirEnv)
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, "plugin.crt"), filepath.Join(dir, "plugin.key"))
	if err != nil {
		return nil, err
	}
	caPEM, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, errors.New("no CA certificate in ca.crt")
	}
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		ClientCAs:    pool,
		RootCAs:      pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ServerName:   pluginServerName,
		MinVersion:   tls.VersionTLS12,
	}, nil
}

// ownPKI writes a CA and a plugin certificate for the TLS children and
// returns the directory and the host's TLS configuration (a certificate
// of that CA, or of another CA when foreign).
func ownPKI(t *testing.T, foreign bool) (string, *tls.Config) {
	t.Helper()
	dir := testutil.TempDir(t)
	ca, err := testpki.NewCA("interop CA")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ca.WriteCA(dir, "ca"); err != nil {
		t.Fatal(err)
	}
	pluginPair, err := ca.Issue("plugin", pluginServerName)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := pluginPair.Write(dir, "plugin"); err != nil {
		t.Fatal(err)
	}
	signer := ca
	if foreign {
		if signer, err = testpki.NewCA("another CA"); err != nil {
			t.Fatal(err)
		}
	}
	// go-plugin uses one configuration both ways, so a brokered server on
	// the host presents the host's certificate to a plugin that expects
	// ServerName: the host's certificate carries that name too.
	hostPair, err := signer.Issue("host", pluginServerName)
	if err != nil {
		t.Fatal(err)
	}
	hostCert, err := hostPair.TLS()
	if err != nil {
		t.Fatal(err)
	}
	return dir, &tls.Config{
		Certificates: []tls.Certificate{hostCert},
		RootCAs:      ca.Pool(),
		ClientCAs:    ca.Pool(),
		ServerName:   pluginServerName,
		MinVersion:   tls.VersionTLS12,
	}
}

func TestGoPluginHostWithTLSConfigLoadsPlugkitPlugin(t *testing.T) {
	dir, hostTLS := ownPKI(t, false)
	var logs syncBuffer
	_, store, _ := goPluginHost(t, &logs, &syncBuffer{}, &syncBuffer{}, func(cfg *goplugin.ClientConfig) {
		cfg.Cmd = exec.Command(self(t))
		cfg.Cmd.Env = append(childEnv("pk-store-tls"), tlsDirEnv+"="+dir)
		cfg.AutoMTLS = false
		cfg.TLSConfig = hostTLS
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := store.List(ctx, &objectstorev1.ListRequest{Prefix: "tls"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"tls", "client-cert-verified", "client-cn=host"}; !slices.Equal(resp.GetKeys(), want) {
		t.Errorf("the plugkit plugin sees %v, want %v", resp.GetKeys(), want)
	}
	putGet(t, store, "own-tls")
}

func TestGoPluginHostWithAutoMTLSRefusedByOwnTLSPlugin(t *testing.T) {
	dir, _ := ownPKI(t, false)
	var stderr syncBuffer
	cmd := exec.Command(self(t))
	cmd.Env = append(childEnv("pk-store-tls"), tlsDirEnv+"="+dir)
	c := goplugin.NewClient(&goplugin.ClientConfig{
		HandshakeConfig:  pkHandshake,
		Plugins:          goplugin.PluginSet{"objectstore": &objectStorePlugin{}},
		Cmd:              cmd,
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		AutoMTLS:         true,
		StartTimeout:     20 * time.Second,
		Logger:           hclog.New(&hclog.LoggerOptions{Output: &stderr, Level: hclog.Debug}),
	})
	defer c.Kill()
	_, err := c.Client()
	if err == nil {
		t.Fatal("a go-plugin host asking for AutoMTLS connected to a plugin with its own TLS")
	}
	t.Logf("go-plugin host: %v", err)
	if !waitContains(&stderr, "Config.TLSProvider", 1) {
		t.Errorf("the plugin's error does not say what to do; the host saw:\n%s", stderr.String())
	}
}

func TestPlugkitHostWithTLSLoadsGoPluginWithTLSProvider(t *testing.T) {
	dir, hostTLS := ownPKI(t, false)
	cfg := goPluginConfig(t, "gp-store-tls", 4)
	cfg.Env = append(cfg.Env, tlsDirEnv+"="+dir)
	cfg.Security = host.TLS(hostTLS)
	c := startHost(t, cfg)
	if !c.TLS() {
		t.Error("TLS() = false on a connection made with host.TLS")
	}
	if got := list(t, c.Conn(), ""); !slices.Equal(got, []string{"version-4"}) {
		t.Errorf("List = %v", got)
	}
	// The broker uses the same configuration both ways: the go-plugin
	// plugin dials the host's brokered server with its TLSProvider's
	// configuration, and the host dials the plugin's with host.TLS.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	id := c.Broker().NextID()
	if err := c.Broker().Serve(ctx, id, func(s *grpc.Server) {
		objectstorev1.RegisterObjectStoreServer(s, fixedKeys{keys: []string{"served-by-plugkit-host"}})
	}); err != nil {
		t.Fatal(err)
	}
	if got, want := list(t, c.Conn(), "dial:"+itoa(id)), []string{"via-broker", "served-by-plugkit-host", "asked-by-go-plugin"}; !slices.Equal(got, want) {
		t.Errorf("callback through the host's broker: %v, want %v", got, want)
	}
	const pluginID = 1000
	list(t, c.Conn(), "serve:"+itoa(pluginID))
	conn, err := c.Broker().Dial(ctx, pluginID)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if got, want := list(t, conn, "asked-by-plugkit"), []string{"served-by-go-plugin", "asked-by-plugkit"}; !slices.Equal(got, want) {
		t.Errorf("call through the plugin's broker: %v, want %v", got, want)
	}
}

func TestPlugkitHostTLSMismatches(t *testing.T) {
	// A host certificate from another CA is refused by the plugin.
	dir, foreignTLS := ownPKI(t, true)
	cfg := goPluginConfig(t, "gp-store-tls", 4)
	cfg.Env = append(cfg.Env, tlsDirEnv+"="+dir)
	cfg.Security = host.TLS(foreignTLS)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if c, err := host.Start(ctx, cfg.Command, cfg.Options); err == nil {
		c.Close()
		t.Error("a host with a certificate of another CA was accepted")
	}

	// A host left with AutoMTLS on is told the plugin serves its own TLS.
	cfg.Security = host.Security{}
	_, err := host.Start(ctx, cfg.Command, cfg.Options)
	if err == nil || !strings.Contains(err.Error(), "host.TLS") {
		t.Errorf("AutoMTLS host against an own-TLS plugin: %v, want an error naming host.TLS", err)
	}

	// A plugkit plugin with its own TLS refuses a plugkit host asking for
	// AutoMTLS, saying what to do.
	pk := goPluginConfig(t, "pk-store-tls", 1)
	pk.Cookie = pkCookie
	pk.Env = append(pk.Env, tlsDirEnv+"="+dir)
	_, err = host.Start(ctx, pk.Command, pk.Options)
	if err == nil || !strings.Contains(err.Error(), "TLSProvider") {
		t.Errorf("AutoMTLS host against an own-TLS plugkit plugin: %v, want the plugin's error naming TLSProvider", err)
	}
}

func TestPlugkitHostWithTLSLoadsPlugkitPlugin(t *testing.T) {
	dir, hostTLS := ownPKI(t, false)
	cfg := goPluginConfig(t, "pk-store-tls", 1)
	cfg.Cookie = pkCookie
	cfg.Env = append(cfg.Env, tlsDirEnv+"="+dir)
	cfg.Security = host.TLS(hostTLS)
	c := startHost(t, cfg)
	if got, want := list(t, c.Conn(), "tls"), []string{"tls", "client-cert-verified", "client-cn=host"}; !slices.Equal(got, want) {
		t.Errorf("the plugin sees %v, want %v", got, want)
	}
}
