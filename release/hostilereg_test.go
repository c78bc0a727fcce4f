package release

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	catalogv1 "github.com/plugkit/plugkit/gen/plugkit/catalog/v1"
)

// fakeRepo is the repository a hostile registry serves.
const fakeRepo = "acme/hostile"

// hostileRegistry serves h on a loopback listener as a registry and opens
// fakeRepo on it, with opts (PlainHTTP is set).
func hostileRegistry(t testing.TB, opts Options, h http.HandlerFunc) *Repository {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	opts.PlainHTTP = true
	repo, err := Open(strings.TrimPrefix(srv.URL, "http://")+"/"+fakeRepo, opts)
	if err != nil {
		t.Fatal(err)
	}
	return repo
}

// serveManifest answers a manifest GET or HEAD with raw.
func serveManifest(w http.ResponseWriter, r *http.Request, mediaType string, raw []byte) {
	w.Header().Set("Content-Type", mediaType)
	w.Header().Set("Docker-Content-Digest", digest.FromBytes(raw).String())
	w.Header().Set("Content-Length", strconv.Itoa(len(raw)))
	if r.Method != http.MethodHead {
		w.Write(raw)
	}
}

// notFound answers as a registry does for what it does not hold.
func notFound(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusNotFound)
	w.Write([]byte(`{"errors":[{"code":"MANIFEST_UNKNOWN","message":"manifest unknown"}]}`))
}

// fakeRelease is a release built in memory: its index, and this machine's
// manifest, whose one layer claims layerSize bytes.
type fakeRelease struct {
	index, manifest []byte
	layer           ocispec.Descriptor
}

// newFakeRelease builds a release claiming desc; padding > 0 adds about
// that many bytes of names of nameLen bytes (8 or more) to its Describe
// answer: the shorter the names, the more a parsed index costs.
func newFakeRelease(t testing.TB, desc *catalogv1.DescribeResponse, layerSize int64, padding, nameLen int) fakeRelease {
	t.Helper()
	layer := ocispec.Descriptor{MediaType: MediaTypeBinary, Digest: digest.FromString("a layer of " + strconv.FormatInt(layerSize, 10)), Size: layerSize,
		Annotations: map[string]string{ocispec.AnnotationTitle: "objectstore-fs"}}
	m := ocispec.Manifest{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageManifest, ArtifactType: ArtifactType,
		Config: ocispec.DescriptorEmptyJSON, Layers: []ocispec.Descriptor{layer}}
	manifest, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	goos, goarch, _ := strings.Cut(hostPlatform, "/")
	if padding > 0 { // each name takes nameLen+6 bytes in the index at most (escaped quotes, comma, a space)
		desc = proto.Clone(desc).(*catalogv1.DescribeResponse)
		m := desc.Kinds[0].Majors[0]
		for i := range padding / (nameLen + 6) {
			m.Names = append(m.Names, fmt.Sprintf("n%0*d", nameLen-1, i))
		}
	}
	meta, err := protojson.Marshal(desc)
	if err != nil {
		t.Fatal(err)
	}
	idx := ocispec.Index{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageIndex, ArtifactType: ArtifactType,
		Manifests: []ocispec.Descriptor{{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.FromBytes(manifest), Size: int64(len(manifest)),
			Platform: &ocispec.Platform{OS: goos, Architecture: goarch}}},
		Annotations: map[string]string{AnnotationDescribe: string(meta), ocispec.AnnotationVersion: desc.GetPluginVersion()}}
	index, err := json.Marshal(idx)
	if err != nil {
		t.Fatal(err)
	}
	return fakeRelease{index: index, manifest: manifest, layer: layer}
}

// endlessTags answers every tag list page with one more page of n tags
// and a link to the next, forever; it counts the pages served.
func endlessTags(n int, pages *atomic.Int64) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v2/"+fakeRepo+"/tags/list" {
			notFound(w)
			return
		}
		p := pages.Add(1)
		tags := make([]string, n)
		for i := range tags {
			tags[i] = fmt.Sprintf("0.%d.%d", p, i)
		}
		w.Header().Set("Link", fmt.Sprintf(`</v2/%s/tags/list?last=0.%d.0&n=%d>; rel="next"`, fakeRepo, p, n))
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"name": fakeRepo, "tags": tags})
	}
}

// unsignedHugeRelease serves fake, unsigned, as release 2.1.0: the answer
// for its signature tag waits for hold(r) to return, then says there is
// none; its layer streams zeros for as long as the client reads, each GET
// counted in blobGets.
func unsignedHugeRelease(fake fakeRelease, hold func(r *http.Request), blobGets *atomic.Int64) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		switch p := r.URL.Path; {
		case p == "/v2/"+fakeRepo+"/tags/list":
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"name":"` + fakeRepo + `","tags":["2.1.0"]}`))
		case p == "/v2/"+fakeRepo+"/manifests/2.1.0":
			serveManifest(w, r, ocispec.MediaTypeImageIndex, fake.index)
		case p == "/v2/"+fakeRepo+"/manifests/"+digest.FromBytes(fake.manifest).String():
			serveManifest(w, r, ocispec.MediaTypeImageManifest, fake.manifest)
		case strings.HasSuffix(p, ".sig"):
			hold(r)
			notFound(w)
		case p == "/v2/"+fakeRepo+"/blobs/"+fake.layer.Digest.String():
			blobGets.Add(1)
			w.Header().Set("Content-Length", strconv.FormatInt(fake.layer.Size, 10))
			zeros := make([]byte, 1<<20)
			for r.Context().Err() == nil {
				if _, err := w.Write(zeros); err != nil {
					return
				}
			}
		default:
			notFound(w)
		}
	}
}

// manyIndexes serves fake's index under n tags, 1.0.0 to 1.0.N-1, adding
// the bytes of each index served to served.
func manyIndexes(fake fakeRelease, n int, served *atomic.Int64) http.HandlerFunc {
	tags := make([]string, n)
	for i := range tags {
		tags[i] = fmt.Sprintf("1.0.%d", i)
	}
	return func(w http.ResponseWriter, r *http.Request) {
		switch p := r.URL.Path; {
		case p == "/v2/"+fakeRepo+"/tags/list":
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(map[string]any{"name": fakeRepo, "tags": tags})
		case strings.HasPrefix(p, "/v2/"+fakeRepo+"/manifests/1.0."):
			served.Add(int64(len(fake.index)))
			serveManifest(w, r, ocispec.MediaTypeImageIndex, fake.index)
		default:
			notFound(w)
		}
	}
}
