package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/credentials"

	"github.com/plugkit/plugkit/handshake"
	"github.com/plugkit/plugkit/release"
)

func init() {
	commands["release"] = command{
		summary: "publish a plugin release to an OCI registry (push), copy one into a mirror (mirror), or show it all (demo)",
		run:     runRelease,
	}
}

// registryFlags are the flags of the commands that reach a registry.
type registryFlags struct {
	plainHTTP bool
	caFile    string
	timeout   time.Duration
	// limits bound what listing a repository's releases reads.
	limits release.Options
}

func (r *registryFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&r.plainHTTP, "plain-http", false, "talk HTTP, not HTTPS, to the registry (a registry on loopback)")
	fs.StringVar(&r.caFile, "ca-file", "", "PEM `file` of the CA certificates the registry's certificate is checked against (default: the system's)")
	fs.DurationVar(&r.timeout, "timeout", 10*time.Minute, "give up after this `duration`")
	fs.IntVar(&r.limits.MaxTags, "max-tags", release.DefaultMaxTags, "read at most this `many` tags of the repository (a signed release has two)")
	fs.IntVar(&r.limits.MaxTagPages, "max-tag-pages", release.DefaultMaxTagPages, "read at most this `many` pages of the repository's tag list")
	fs.Int64Var(&r.limits.MaxIndexBytes, "max-index-bytes", release.DefaultMaxIndexBytes, "refuse a release's index larger than this many `bytes`")
	fs.Int64Var(&r.limits.MaxMetadataBytes, "max-metadata-bytes", release.DefaultMaxMetadataBytes, "read at most this many `bytes` of release indexes in all")
	fs.DurationVar(&r.limits.MetadataTimeout, "metadata-timeout", release.DefaultMetadataTimeout, "give up listing the releases (tags and indexes) after this `duration`")
	fs.IntVar(&r.limits.MaxReferrers, "max-referrers", release.DefaultMaxReferrers, "read at most this `many` referrers of a release (its signatures among them)")
	fs.Int64Var(&r.limits.MaxSignatureBytes, "max-signature-bytes", release.DefaultMaxSignatureBytes, "refuse a signature manifest or sigstore bundle larger than this many `bytes`")
}

// options returns the registry options: credentials from
// PLUGKIT_REGISTRY_USERNAME and PLUGKIT_REGISTRY_PASSWORD, else from the
// docker configuration (docker login).
func (r *registryFlags) options() (release.Options, error) {
	opts := r.limits
	opts.PlainHTTP = r.plainHTTP
	if r.caFile != "" {
		pem, err := os.ReadFile(r.caFile)
		if err != nil {
			return opts, fmt.Errorf("--ca-file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return opts, fmt.Errorf("--ca-file %s holds no PEM certificate", r.caFile)
		}
		opts.TLS = &tls.Config{RootCAs: pool}
	}
	if user := os.Getenv("PLUGKIT_REGISTRY_USERNAME"); user != "" {
		cred := auth.Credential{Username: user, Password: os.Getenv("PLUGKIT_REGISTRY_PASSWORD")}
		opts.Credential = func(context.Context, string) (auth.Credential, error) { return cred, nil }
		return opts, nil
	}
	if store, err := credentials.NewStoreFromDocker(credentials.StoreOptions{}); err == nil {
		opts.Credential = credentials.Credential(store)
	}
	return opts, nil
}

// open opens a source with the flags' options.
func (r *registryFlags) open(source string) (*release.Repository, error) {
	opts, err := r.options()
	if err != nil {
		return nil, err
	}
	return release.Open(source, opts)
}

// deadline returns a context cancelled by Ctrl-C or SIGTERM, so that an
// install stops its downloads and removes its temporary file, or after
// --timeout.
func (r *registryFlags) deadline() (context.Context, context.CancelFunc) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	return ctx, func() { cancel(); stop() }
}

func runRelease(args []string, stdout, stderr io.Writer) int {
	const usage = "plugkit release (push DIR --ref REGISTRY/REPO:VERSION --key KEY --cookie KEY=VALUE | mirror --from REGISTRY/REPO --to oci-layout:DIR VERSION... | demo)"
	if len(args) == 0 {
		fmt.Fprintf(stderr, "usage: %s\n", usage)
		return 2
	}
	switch args[0] {
	case "-h", "-help", "--help":
		fmt.Fprintf(stdout, "usage: %s\n\nplugkit release SUBCOMMAND --help describes each subcommand's flags.\n", usage)
		return 0
	case "push":
		return runReleasePush(args[1:], stdout, stderr)
	case "mirror":
		return runReleaseMirror(args[1:], stdout, stderr)
	case "demo":
		return runDemoRelease(args[1:], stdout, stderr)
	}
	fmt.Fprintf(stderr, "plugkit release: unknown subcommand %q\nusage: %s\n", args[0], usage)
	return 2
}

func runReleasePush(args []string, stdout, stderr io.Writer) int {
	const usage = "plugkit release push DIR --ref REGISTRY/REPO:VERSION --key KEY --cookie KEY=VALUE [--wasm-cache DIR [--wasm-cache-bytes N]] [--plain-http] [--ca-file FILE]\n\nDIR holds one binary per platform: DIR/OS_ARCH/NAME (dist/linux_amd64/objectstore-fs, dist/windows_amd64/objectstore-fs.exe), and may hold one WebAssembly module for every platform, DIR/wasip1_wasm/NAME.wasm; this machine's binary (else the module) is started for the release's Describe answer."
	fs := newFlagSet("release push", usage, stderr)
	ref := fs.String("ref", "", "where to publish, `REGISTRY/REPO:VERSION`; VERSION is the plugin's own version")
	keyFile := fs.String("key", "", "the signing key, a PEM ECDSA P-256 private key `file`: cosign generate-key-pair's cosign.key (its password in COSIGN_PASSWORD) or an unencrypted one")
	cookie := fs.String("cookie", "", "the plugin's magic cookie, `KEY=VALUE`")
	var wasmCache wasmCacheFlags
	wasmCache.register(fs, "a compilation cache `directory` for the WebAssembly module, when it is what is started (no binary for this machine); without it, the module is interpreted")
	var reg registryFlags
	reg.register(fs)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return 2
	}
	if len(pos) != 1 || *ref == "" || *keyFile == "" || *cookie == "" {
		fmt.Fprintf(stderr, "plugkit release push: DIR, --ref, --key and --cookie are required\nusage: %s\n", usage)
		return 2
	}
	if err := wasmCache.check(); err != nil {
		fmt.Fprintf(stderr, "plugkit release push: %v\nusage: %s\n", err, usage)
		return 2
	}
	source, version, err := release.ParseRef(*ref)
	if err != nil {
		return fail(stderr, "release push", err)
	}
	c, err := handshake.ParseCookie(*cookie)
	if err != nil {
		return fail(stderr, "release push", err)
	}
	key, err := release.LoadPrivateKey(*keyFile)
	if err != nil {
		return fail(stderr, "release push", err)
	}
	repo, err := reg.open(source)
	if err != nil {
		return fail(stderr, "release push", err)
	}
	ctx, cancel := reg.deadline()
	defer cancel()
	guests := checkRuntime(wasmCache)
	defer guests.Close(context.Background())
	rel, err := release.Push(ctx, repo, release.Publication{Dir: pos[0], Version: version, Key: key, Cookie: c, Guests: guests})
	if err != nil {
		return fail(stderr, "release push", err)
	}
	fmt.Fprintf(stdout, "pushed %s:%s %s (%s), signed\n", source, rel.Version, rel.Digest, strings.Join(rel.Platforms, ", "))
	return 0
}

func runReleaseMirror(args []string, stdout, stderr io.Writer) int {
	const usage = "plugkit release mirror --from REGISTRY/REPO --to oci-layout:DIR VERSION..."
	fs := newFlagSet("release mirror", usage, stderr)
	from := fs.String("from", "", "the `source` repository")
	to := fs.String("to", "", "the `destination`: oci-layout:DIR, or another REGISTRY/REPO")
	var reg registryFlags
	reg.register(fs)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return 2
	}
	if len(pos) == 0 || *from == "" || *to == "" {
		fmt.Fprintf(stderr, "plugkit release mirror: --from, --to and a VERSION are required\nusage: %s\n", usage)
		return 2
	}
	src, err := reg.open(*from)
	if err != nil {
		return fail(stderr, "release mirror", err)
	}
	dst, err := reg.open(*to)
	if err != nil {
		return fail(stderr, "release mirror", err)
	}
	ctx, cancel := reg.deadline()
	defer cancel()
	for _, v := range pos {
		if err := release.Mirror(ctx, src, dst, v); err != nil {
			return fail(stderr, "release mirror", err)
		}
		fmt.Fprintf(stdout, "mirrored %s:%s to %s\n", *from, v, *to)
	}
	return 0
}

// fail prints err on one line, or as written when it is a no-fit
// message, and returns exit status 1.
func fail(stderr io.Writer, cmd string, err error) int {
	if nf, ok := err.(*release.NoFitError); ok {
		fmt.Fprintf(stderr, "plugkit %s: %s", cmd, safeLines(nf.Error()))
		return 1
	}
	fmt.Fprintf(stderr, "plugkit %s: %s\n", cmd, oneLine(err))
	return 1
}

// safeLines escapes control characters line by line, keeping the lines.
func safeLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = safe(l)
	}
	return strings.Join(lines, "\n")
}
