package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/plugkit/plugkit/describe"
	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/tlsfiles"
	"github.com/plugkit/plugkit/manager"
)

// remoteFlags are the flags that name a plugin service (a plugin run with
// PLUGKIT_LISTEN) in place of a plugin path.
type remoteFlags struct {
	connect          string
	ca, cert, key    string
	serverName       string
	insecureLoopback bool
}

func (r *remoteFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&r.connect, "connect", "", "connect to a plugin service at `HOST:PORT` (comma-separated for replicas) instead of launching a plugin path")
	fs.StringVar(&r.ca, "tls-ca", "", "with --connect: the CA `file` (PEM) that signed the service's certificate")
	fs.StringVar(&r.cert, "tls-cert", "", "with --connect: this host's client certificate `file` (PEM)")
	fs.StringVar(&r.key, "tls-key", "", "with --connect: this host's client key `file` (PEM)")
	fs.StringVar(&r.serverName, "tls-server-name", "", "with --connect: the `name` to expect in the service's certificate (default: the host part of each endpoint)")
	fs.BoolVar(&r.insecureLoopback, "insecure-loopback", false, "with --connect: plain text to a loopback service started with PLUGKIT_INSECURE_LOOPBACK=1")
}

func (r *remoteFlags) set() bool { return r.connect != "" }

// dial connects to the service. versions nil accepts any version the
// service serves. It reports failures itself and returns the exit code.
func (r *remoteFlags) dial(cmd string, versions []int, timeout time.Duration, verbose bool, stderr io.Writer) (*host.Client, int) {
	cfg := host.Options{
		Versions: versions,
		Logger:   cliLogger(verbose, stderr),
	}
	if len(cfg.Versions) == 0 {
		for v := range 100 {
			cfg.Versions = append(cfg.Versions, v)
		}
	}
	switch {
	case r.insecureLoopback:
		if r.ca != "" || r.cert != "" || r.key != "" {
			fmt.Fprintf(stderr, "%s: --insecure-loopback and --tls-* exclude each other\n", cmd)
			return nil, 2
		}
		cfg.Security = host.Plaintext()
	default:
		if r.ca == "" || r.cert == "" || r.key == "" {
			fmt.Fprintf(stderr, "%s: --connect needs --tls-ca, --tls-cert and --tls-key: a plugin service requires mutual TLS (for a loopback service started with PLUGKIT_INSECURE_LOOPBACK=1, use --insecure-loopback)\n", cmd)
			return nil, 2
		}
		tc, err := tlsfiles.Client(r.ca, r.cert, r.key, r.serverName)
		if err != nil {
			fmt.Fprintf(stderr, "%s: %s\n", cmd, oneLine(err))
			return nil, 2
		}
		cfg.Security = host.TLS(tc)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	client, err := host.Dial(ctx, host.Remote{Endpoints: strings.Split(r.connect, ",")}, cfg)
	if err != nil {
		reportError(stderr, cmd, err)
		if strings.HasPrefix(err.Error(), "host:") {
			return nil, 2
		}
		return nil, 1
	}
	track(func() { client.Close() })
	return client, 0
}

// cliLogger logs only what a command's user asked for: nothing of the
// plugin's below error level, unless --verbose.
func cliLogger(verbose bool, stderr io.Writer) *slog.Logger {
	level := slog.LevelError + 1
	if verbose {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
}

// describeRemote describes a plugin service through its catalog, as
// `plugins list --connect` shows it.
func describeRemote(r *remoteFlags, stderr io.Writer) (manager.Entry, int) {
	client, code := r.dial("plugkit plugins list", nil, 30*time.Second, false, stderr)
	if client == nil {
		return manager.Entry{}, code
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b := manager.Entry{Location: manager.Location{Origin: manager.OriginRemote, Endpoints: strings.Split(r.connect, ",")}}
	b.Description, b.Err = describe.Conn(ctx, client.Conn())
	if b.Err != nil {
		b.Err = fmt.Errorf("%w (is it a plugkit kinds plugin, served with catalog.Serve?)", b.Err)
	}
	return b, 0
}
