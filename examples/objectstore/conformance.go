package objectstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/plugkit/plugkit/conformance"
)

// The conformance suites of the objectstore kind, one per major, over the
// host's typed client of that major. A plugin's own test runs them through
// plugintest; cmd/objectstore-matrix runs them over built releases.

// key names an object of the current suite run, so that runs against the
// same plugin process never see each other's objects.
func key(ctx context.Context, name string) string { return conformance.RunID(ctx) + "/" + name }

// initFresh gives the store a fresh directory (the fs store keeps its
// objects there; others ignore it) and removes it afterwards. The
// directory is conformance.TempDir's: one a WebAssembly plugin in the
// matrix is granted.
func initFresh(ctx context.Context, init func(context.Context, map[string]string) error) (func(), error) {
	dir, cleanup, err := conformance.TempDir(ctx, "objectstore-conformance-")
	if err != nil {
		return nil, err
	}
	if err := init(ctx, map[string]string{"dir": dir}); err != nil {
		cleanup()
		return nil, fmt.Errorf("Init: %w", err)
	}
	return cleanup, nil
}

// wantCode checks that err carries the gRPC code want.
func wantCode(op string, err error, want codes.Code) error {
	if got := status.Code(err); got != want {
		return fmt.Errorf("%s: got %v (%v), want %v", op, got, err, want)
	}
	return nil
}

// pattern is n bytes that differ from position to position.
func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i/251)
	}
	return b
}

func roundTrip(ctx context.Context, s StoreV1, name string, data []byte) error {
	k := key(ctx, name)
	if err := s.Put(ctx, k, data); err != nil {
		return err
	}
	got, err := s.Get(ctx, k)
	if err != nil {
		return err
	}
	if !bytes.Equal(got, data) {
		return fmt.Errorf("get %q returned %d bytes that differ from the %d put (first bytes %q, want %q)", k, len(got), len(data), head(got), head(data))
	}
	return nil
}

func head(b []byte) []byte { return b[:min(len(b), 16)] }

// v1Cases are the behaviours every major keeps from v1.
func v1Cases() []conformance.Case[StoreV1] {
	return []conformance.Case[StoreV1]{
		{Name: "put then get returns the bytes", Run: func(ctx context.Context, s StoreV1) error {
			return roundTrip(ctx, s, "hello", []byte("hello, object store"))
		}},
		{Name: "an object larger than a chunk round-trips", Run: func(ctx context.Context, s StoreV1) error {
			return roundTrip(ctx, s, "big", pattern(3*ChunkSize+17))
		}},
		{Name: "an empty object round-trips", Run: func(ctx context.Context, s StoreV1) error {
			return roundTrip(ctx, s, "empty", []byte{})
		}},
		{Name: "put replaces an object", Run: func(ctx context.Context, s StoreV1) error {
			if err := s.Put(ctx, key(ctx, "over"), []byte("first")); err != nil {
				return err
			}
			return roundTrip(ctx, s, "over", []byte("second, longer"))
		}},
		{Name: "get of a missing object is NotFound", Run: func(ctx context.Context, s StoreV1) error {
			_, err := s.Get(ctx, key(ctx, "missing"))
			return wantCode("get of a missing object", err, codes.NotFound)
		}},
		{Name: "list returns the keys under a prefix, sorted", Run: func(ctx context.Context, s StoreV1) error {
			for _, n := range []string{"list/b", "list/a", "list/c/d", "other/x"} {
				if err := s.Put(ctx, key(ctx, n), []byte(n)); err != nil {
					return err
				}
			}
			got, err := s.List(ctx, key(ctx, "list/"))
			if err != nil {
				return err
			}
			want := []string{key(ctx, "list/a"), key(ctx, "list/b"), key(ctx, "list/c/d")}
			if !slices.Equal(got, want) {
				return fmt.Errorf("list %q = %q, want %q", key(ctx, "list/"), got, want)
			}
			return nil
		}},
		{Name: "exists follows put and delete", Run: func(ctx context.Context, s StoreV1) error {
			k := key(ctx, "exists")
			steps := []struct {
				do   func() error
				want bool
			}{
				{func() error { return nil }, false},
				{func() error { return s.Put(ctx, k, []byte("x")) }, true},
				{func() error { return s.Delete(ctx, k) }, false},
			}
			for i, st := range steps {
				if err := st.do(); err != nil {
					return err
				}
				ok, err := s.Exists(ctx, k)
				if err != nil || ok != st.want {
					return fmt.Errorf("step %d: exists %q = %v, %v; want %v", i, k, ok, err, st.want)
				}
			}
			return nil
		}},
		{Name: "delete of a missing object is NotFound", Run: func(ctx context.Context, s StoreV1) error {
			return wantCode("delete of a missing object", s.Delete(ctx, key(ctx, "missing")), codes.NotFound)
		}},
	}
}

// SuiteV1 is the conformance suite of objectstore major 1, over a v1
// host's client.
func SuiteV1() conformance.Suite[StoreV1] {
	return conformance.Suite[StoreV1]{
		Kind: Kind, Major: 1, Cases: v1Cases(),
		Setup: func(ctx context.Context, s StoreV1) (func(), error) { return initFresh(ctx, s.Init) },
	}
}

// SuiteV2 is the conformance suite of objectstore major 2, over the v2
// host's Store: v1's behaviours, Stat and Copy, and the capability rule of
// minor 2.1 (Presign is offered only with the presign capability). Run
// through the v1->v2 adapter, it checks the adapter too.
func SuiteV2() conformance.Suite[Store] {
	var cases []conformance.Case[Store]
	for _, c := range v1Cases() {
		cases = append(cases, conformance.Case[Store]{Name: c.Name, Run: func(ctx context.Context, s Store) error { return c.Run(ctx, s) }})
	}
	cases = append(cases,
		conformance.Case[Store]{Name: "stat gives the size and SHA-256", Run: func(ctx context.Context, s Store) error {
			data := pattern(ChunkSize + 5)
			k := key(ctx, "stat")
			if err := s.Put(ctx, k, data); err != nil {
				return err
			}
			st, err := s.Stat(ctx, k)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(data)
			if st.Size != int64(len(data)) || st.SHA256 != hex.EncodeToString(sum[:]) {
				return fmt.Errorf("stat %q = size %d sha256 %s; want %d and %x", k, st.Size, st.SHA256, len(data), sum)
			}
			return nil
		}},
		conformance.Case[Store]{Name: "stat of a missing object is NotFound", Run: func(ctx context.Context, s Store) error {
			_, err := s.Stat(ctx, key(ctx, "missing"))
			return wantCode("stat of a missing object", err, codes.NotFound)
		}},
		conformance.Case[Store]{Name: "copy duplicates an object", Run: func(ctx context.Context, s Store) error {
			src, dst := key(ctx, "copy/src"), key(ctx, "copy/dst")
			data := []byte("copy me")
			if err := s.Put(ctx, src, data); err != nil {
				return err
			}
			if err := s.Copy(ctx, src, dst); err != nil {
				return err
			}
			for _, k := range []string{src, dst} {
				got, err := s.Get(ctx, k)
				if err != nil {
					return err
				}
				if !bytes.Equal(got, data) {
					return fmt.Errorf("after copy, get %q = %q, want %q", k, got, data)
				}
			}
			return nil
		}},
		conformance.Case[Store]{Name: "copy of a missing object is NotFound", Run: func(ctx context.Context, s Store) error {
			return wantCode("copy of a missing object", s.Copy(ctx, key(ctx, "missing"), key(ctx, "dst")), codes.NotFound)
		}},
		conformance.Case[Store]{Name: "presign is offered only with the presign capability", Run: func(ctx context.Context, s Store) error {
			info := s.Info()
			k := key(ctx, "presign")
			if err := s.Put(ctx, k, []byte("signed")); err != nil {
				return err
			}
			url, err := s.Presign(ctx, k)
			if !info.Has(CapPresign) {
				if !errors.Is(err, ErrNoCapability) {
					return fmt.Errorf("objectstore %d.%d without %q: presign = %q, %v; want ErrNoCapability", info.Major, info.Minor, CapPresign, url, err)
				}
				return nil
			}
			if info.Major != 2 || info.Minor < 1 {
				return fmt.Errorf("the plugin announces %q at objectstore %d.%d; it is a capability of 2.1", CapPresign, info.Major, info.Minor)
			}
			if err != nil || url == "" {
				return fmt.Errorf("presign with the capability = %q, %v; want a URL", url, err)
			}
			_, err = s.Presign(ctx, key(ctx, "missing"))
			return wantCode("presign of a missing object", err, codes.NotFound)
		}},
	)
	return conformance.Suite[Store]{
		Kind: Kind, Major: 2, Cases: cases,
		Setup: func(ctx context.Context, s Store) (func(), error) { return initFresh(ctx, s.Init) },
	}
}

// SuiteV3 is the conformance suite of objectstore major 3: versioned
// objects.
func SuiteV3() conformance.Suite[StoreV3] {
	return conformance.Suite[StoreV3]{Kind: Kind, Major: 3, Cases: []conformance.Case[StoreV3]{
		{Name: "put then get returns the bytes", Run: func(ctx context.Context, s StoreV3) error {
			k, data := key(ctx, "hello"), []byte("hello, versions")
			v, err := s.Put(ctx, k, data)
			if err != nil {
				return err
			}
			if v == "" {
				return fmt.Errorf("put %q returned no version ID", k)
			}
			for _, ver := range []string{v, ""} {
				got, err := s.Get(ctx, k, ver)
				if err != nil {
					return err
				}
				if !bytes.Equal(got, data) {
					return fmt.Errorf("get %q version %q = %q, want %q", k, ver, got, data)
				}
			}
			return nil
		}},
		{Name: "every put is a new version and old versions stay readable", Run: func(ctx context.Context, s StoreV3) error {
			k := key(ctx, "versions")
			v1, err := s.Put(ctx, k, []byte("one"))
			if err != nil {
				return err
			}
			v2, err := s.Put(ctx, k, []byte("two"))
			if err != nil {
				return err
			}
			if v1 == v2 {
				return fmt.Errorf("two puts of %q returned the same version %q", k, v1)
			}
			for ver, want := range map[string]string{v1: "one", v2: "two", "": "two"} {
				got, err := s.Get(ctx, k, ver)
				if err != nil || string(got) != want {
					return fmt.Errorf("get %q version %q = %q, %v; want %q", k, ver, got, err, want)
				}
			}
			return nil
		}},
		{Name: "get of a missing object or version is NotFound", Run: func(ctx context.Context, s StoreV3) error {
			_, err := s.Get(ctx, key(ctx, "missing"), "")
			if err := wantCode("get of a missing object", err, codes.NotFound); err != nil {
				return err
			}
			k := key(ctx, "one-version")
			if _, err := s.Put(ctx, k, []byte("x")); err != nil {
				return err
			}
			_, err = s.Get(ctx, k, "no-such-version")
			return wantCode("get of a missing version", err, codes.NotFound)
		}},
	}}
}

// MatrixHosts are the host majors of this repository's object-store host,
// latest first, for the conformance matrix: v2 (with the v1->v2 adapter)
// and v1. withV3 adds the v3 preview host.
func MatrixHosts(withV3 bool) []conformance.Host {
	hosts := []conformance.Host{
		conformance.HostMajor(SuiteV2(), V2Majors()),
		conformance.HostMajor(SuiteV1(), V1Majors()),
	}
	if withV3 {
		hosts = append([]conformance.Host{conformance.HostMajor(SuiteV3(), V3Majors())}, hosts...)
	}
	return hosts
}
