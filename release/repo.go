package release

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"

	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content/oci"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/errcode"
	"oras.land/oras-go/v2/registry/remote/retry"
)

// Defaults for Options' zero values.
const (
	// DefaultRetries is how many times a failed request to a registry is
	// tried again (a refused connection, a timeout, a 5xx or a 429).
	DefaultRetries = 4
	// DefaultBackoff is the wait before the first retry, doubled for each
	// further one up to 2 seconds.
	DefaultBackoff = 200 * time.Millisecond
	// DefaultResponseTimeout bounds the wait for a registry's response
	// headers to one request.
	DefaultResponseTimeout = 30 * time.Second
	// DefaultMaxTags bounds the tags (of any kind: a signed release has
	// two) that listing a repository's releases reads.
	DefaultMaxTags = 10000
	// DefaultMaxTagPages bounds the pages of the tag list that listing a
	// repository's releases reads.
	DefaultMaxTagPages = 1000
	// DefaultMaxIndexBytes bounds one release's index.
	DefaultMaxIndexBytes = 4 << 20
	// DefaultMaxMetadataBytes bounds the bytes of all the indexes that
	// listing a repository's releases reads.
	DefaultMaxMetadataBytes = 16 << 20
	// DefaultMetadataTimeout bounds the time listing a repository's
	// releases takes: its tags and every release's index.
	DefaultMetadataTimeout = 2 * time.Minute
)

// ErrLimit: a registry's answers exceed one of the bounds of Options
// (MaxTags, MaxTagPages, MaxIndexBytes, MaxMetadataBytes,
// MetadataTimeout). The error names the registry, the bound and the
// setting that raises it.
var ErrLimit = errors.New("the registry's answers exceed a bound")

// LayoutPrefix marks a source that is an OCI image-layout directory (a
// mirror) rather than a registry repository: "oci-layout:/srv/mirror".
const LayoutPrefix = "oci-layout:"

// Options say how to reach a registry. The zero value uses HTTPS with the
// system's roots, anonymous access, and the defaults above.
type Options struct {
	// PlainHTTP talks HTTP instead of HTTPS (a registry on loopback).
	PlainHTTP bool
	// TLS configures HTTPS, e.g. RootCAs for a private registry.
	TLS *tls.Config
	// Credential returns the credential for a registry host; nil is
	// anonymous. auth.StaticCredential and the docker config store of
	// oras.land/oras-go/v2/registry/remote/credentials fit.
	Credential auth.CredentialFunc
	// Retries is how many times a failed request is tried again; 0 means
	// DefaultRetries, a negative value none.
	Retries int
	// Backoff is the wait before the first retry; 0 means DefaultBackoff.
	Backoff time.Duration
	// ResponseTimeout bounds the wait for one response's headers, and
	// for each further piece of a download's body; 0 means
	// DefaultResponseTimeout.
	ResponseTimeout time.Duration
	// MaxTags bounds the tags listing the releases reads; 0 means
	// DefaultMaxTags.
	MaxTags int
	// MaxTagPages bounds the pages of the tag list listing the releases
	// reads; 0 means DefaultMaxTagPages.
	MaxTagPages int
	// MaxIndexBytes bounds one release's index; 0 means
	// DefaultMaxIndexBytes.
	MaxIndexBytes int64
	// MaxMetadataBytes bounds the bytes of all the indexes listing the
	// releases reads; 0 means DefaultMaxMetadataBytes.
	MaxMetadataBytes int64
	// MetadataTimeout bounds the time listing the releases takes (List,
	// Resolve); 0 means DefaultMetadataTimeout.
	MetadataTimeout time.Duration
	// MaxReferrers bounds the referrers of a release Verify reads; 0
	// means DefaultMaxReferrers.
	MaxReferrers int
	// MaxSignatureBytes bounds one signature manifest or sigstore bundle
	// Verify reads from the referrers; 0 means DefaultMaxSignatureBytes.
	MaxSignatureBytes int64
}

// Repository holds a plugin's releases: a repository on a registry, or an
// OCI image-layout directory.
type Repository struct {
	// Source is what Open was given: "REGISTRY/REPO" or "oci-layout:DIR".
	Source string
	target oras.GraphTarget
	tags   registry.TagLister
	// stall bounds a download's wait for its next bytes.
	stall time.Duration
	// limits bound what listing the releases reads.
	limits limits
}

// limits are Options' bounds on what listing the releases reads, with
// the defaults applied.
type limits struct {
	tags, pages  int
	index, total int64
	time         time.Duration
	referrers    int
	signature    int64
}

// limits returns o's bounds, the defaults for its zero values.
func (o Options) limits() limits {
	l := limits{tags: o.MaxTags, pages: o.MaxTagPages, index: o.MaxIndexBytes, total: o.MaxMetadataBytes, time: o.MetadataTimeout,
		referrers: o.MaxReferrers, signature: o.MaxSignatureBytes}
	if l.tags <= 0 {
		l.tags = DefaultMaxTags
	}
	if l.pages <= 0 {
		l.pages = DefaultMaxTagPages
	}
	if l.index <= 0 {
		l.index = DefaultMaxIndexBytes
	}
	if l.total <= 0 {
		l.total = DefaultMaxMetadataBytes
	}
	if l.time <= 0 {
		l.time = DefaultMetadataTimeout
	}
	if l.referrers <= 0 {
		l.referrers = DefaultMaxReferrers
	}
	if l.signature <= 0 {
		l.signature = DefaultMaxSignatureBytes
	}
	return l
}

// overLimit says what of r's exceeds the bound of the setting (an
// Options field) and flag (plugkit's), and how to raise it.
func (r *Repository) overLimit(what string, bound any, setting, flag string) error {
	return fmt.Errorf("%s: %s, more than the bound of %v (%w): if the repository is trusted to be that large, raise release.Options.%s (plugkit --%s)", r.Source, what, bound, ErrLimit, setting, flag)
}

// Open opens a repository: "REGISTRY/REPO" on a registry, or
// LayoutPrefix+DIR for an OCI image-layout directory, created when
// missing (opts, which say how to reach a registry, do not apply to it).
func Open(source string, opts Options) (*Repository, error) {
	if dir, ok := strings.CutPrefix(source, LayoutPrefix); ok {
		store, err := oci.New(dir)
		if err != nil {
			return nil, fmt.Errorf("open the OCI image layout %s: %w", dir, err)
		}
		return &Repository{Source: source, target: store, tags: store, limits: opts.limits()}, nil
	}
	if strings.Contains(source, "@") || strings.Contains(source[strings.LastIndex(source, "/")+1:], ":") {
		return nil, fmt.Errorf("source %q names a tag or digest: give the repository alone, REGISTRY/REPO (the version is chosen by Resolve or the lock file)", source)
	}
	repo, err := remote.NewRepository(source)
	if err != nil {
		return nil, fmt.Errorf("source %q is not REGISTRY/REPO: %w", source, err)
	}
	repo.PlainHTTP = opts.PlainHTTP
	// A registry without the referrers API keeps a signature's referrer
	// in a tag-schema index (sha256-HEX); the index it replaces is left,
	// untagged, for registries that refuse deletes.
	repo.SkipReferrersGC = true
	repo.MaxMetadataBytes = max(opts.limits().index, maxManifest) // a tag list page too
	repo.Client = &auth.Client{
		Client:     &http.Client{Transport: opts.transport()},
		Credential: opts.Credential,
		Cache:      auth.NewCache(),
	}
	return &Repository{Source: source, target: repo, tags: repo, stall: opts.responseTimeout(), limits: opts.limits()}, nil
}

// ParseRef splits "REGISTRY/REPO:VERSION" into the repository and the
// version.
func ParseRef(ref string) (source, version string, err error) {
	i := strings.LastIndex(ref, ":")
	if i < 0 || strings.Contains(ref[i:], "/") {
		return "", "", fmt.Errorf("reference %q has no version: write REGISTRY/REPO:VERSION, e.g. ghcr.io/acme/objectstore-fs:2.1.0", ref)
	}
	return ref[:i], ref[i+1:], nil
}

func (o Options) responseTimeout() time.Duration {
	if o.ResponseTimeout > 0 {
		return o.ResponseTimeout
	}
	return DefaultResponseTimeout
}

func (o Options) transport() http.RoundTripper {
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.TLSClientConfig = o.TLS
	base.ResponseHeaderTimeout = o.responseTimeout()
	retries := o.Retries
	if retries == 0 {
		retries = DefaultRetries
	}
	if retries < 0 {
		return base
	}
	backoff := o.Backoff
	if backoff == 0 {
		backoff = DefaultBackoff
	}
	policy := &retry.GenericPolicy{
		Retryable: retryable,
		Backoff:   retry.ExponentialBackoff(backoff, 2, 0.1),
		MinWait:   backoff,
		MaxWait:   2 * time.Second,
		MaxRetry:  retries,
	}
	t := retry.NewTransport(base)
	t.Policy = func() retry.Policy { return policy }
	return t
}

// retryable retries what oras-go does, and a refused connection too: a
// registry restarting is down for a moment.
func retryable(resp *http.Response, err error) (bool, error) {
	if err != nil && errors.Is(err, syscall.ECONNREFUSED) {
		return true, nil
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true, nil
	}
	return retry.DefaultPredicate(resp, err)
}

// missing says that r has no release version, when err is a "not found"
// for it, and what to do; it returns nil for any other error.
func (r *Repository) missing(version string, err error) error {
	if !errors.Is(err, errdef.ErrNotFound) {
		return nil
	}
	return fmt.Errorf("%s has no release %s: %w; give a version it has (its tags; plugkit install without --lock chooses one)", r.Source, version, err)
}

// wrap names the repository in an error from it.
func (r *Repository) wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, auth.ErrBasicCredentialNotFound) {
		return fmt.Errorf("%s: %s: the registry asks for credentials and none were given: log in (docker login, or PLUGKIT_REGISTRY_USERNAME and PLUGKIT_REGISTRY_PASSWORD for plugkit): %w", r.Source, what, err)
	}
	var resp *errcode.ErrorResponse
	if errors.As(err, &resp) {
		switch resp.StatusCode {
		case http.StatusUnauthorized:
			return fmt.Errorf("%s: %s: the registry refused the credentials given (401 Unauthorized): check the user name and password or token (PLUGKIT_REGISTRY_USERNAME and PLUGKIT_REGISTRY_PASSWORD for plugkit, else docker login's), and log in again if it expired: %w", r.Source, what, err)
		case http.StatusForbidden:
			return fmt.Errorf("%s: %s: the registry denied the account access to the repository (403 Forbidden): ask its owner for read access (install) or write access (release push), or check the repository's name: %w", r.Source, what, err)
		}
	}
	return fmt.Errorf("%s: %s: %w", r.Source, what, err)
}
