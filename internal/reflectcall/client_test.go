package reflectcall_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/reflection"
	reflectionv1alpha "google.golang.org/grpc/reflection/grpc_reflection_v1alpha"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"

	objectstorev1 "github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v1"
	"github.com/plugkit/plugkit/internal/reflectcall"
)

type store struct {
	objectstorev1.UnimplementedObjectStoreServer
}

func (store) Exists(_ context.Context, req *objectstorev1.ExistsRequest) (*objectstorev1.ExistsResponse, error) {
	if req.GetKey() == "" {
		return nil, status.Error(codes.InvalidArgument, "empty key")
	}
	return &objectstorev1.ExistsResponse{Exists: strings.HasPrefix(req.GetKey(), "yes")}, nil
}

func (store) Get(req *objectstorev1.GetRequest, stream grpc.ServerStreamingServer[objectstorev1.GetResponse]) error {
	for i := range 3 {
		if err := stream.Send(&objectstorev1.GetResponse{Chunk: fmt.Appendf(nil, "%s-%d", req.GetKey(), i)}); err != nil {
			return err
		}
	}
	return nil
}

// serve starts an in-process server with the object store and the given
// reflection services ("v1", "v1alpha") and returns a connection to it.
func serve(t *testing.T, reflections ...string) *reflectcall.Client {
	t.Helper()
	ln := bufconn.Listen(1 << 20)
	srv := grpc.NewServer()
	objectstorev1.RegisterObjectStoreServer(srv, store{})
	for _, r := range reflections {
		switch r {
		case "v1":
			reflection.RegisterV1(srv)
		case "v1alpha":
			reflectionv1alpha.RegisterServerReflectionServer(srv, reflection.NewServer(reflection.ServerOptions{Services: srv}))
		}
	}
	go srv.Serve(ln)
	conn, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return ln.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn.Close()
		srv.Stop()
	})
	return reflectcall.New(conn)
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}

func callJSON(t *testing.T, c *reflectcall.Client, method, req string) ([]string, error) {
	t.Helper()
	var out []string
	err := c.CallJSON(ctx(t), method, []byte(req), false, func(b []byte) error {
		out = append(out, string(b))
		return nil
	})
	return out, err
}

func TestUnaryAndServerStreaming(t *testing.T) {
	for _, refl := range []string{"v1", "v1alpha"} {
		t.Run(refl, func(t *testing.T) {
			c := serve(t, refl)
			services, err := c.Services(ctx(t))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(strings.Join(services, " "), "objectstore.v1.ObjectStore") {
				t.Errorf("Services = %v", services)
			}
			out, err := callJSON(t, c, "objectstore.v1.ObjectStore/Exists", `{"key": "yes-please"}`)
			if err != nil || len(out) != 1 || out[0] != `{"exists":true}` {
				t.Errorf("Exists: %q, %v", out, err)
			}
			// The other spellings of a method name, and the empty request.
			out, err = callJSON(t, c, "/objectstore.v1.ObjectStore.Get", "")
			if err != nil || len(out) != 3 || out[2] != `{"chunk":"LTI="}` {
				t.Errorf("Get: %q, %v", out, err)
			}
			// A status error from the server comes back as it is.
			if _, err := callJSON(t, c, "objectstore.v1.ObjectStore/Exists", `{}`); status.Code(err) != codes.InvalidArgument {
				t.Errorf("Exists({}): %v, want InvalidArgument", err)
			}
		})
	}
}

func TestIndentedOutputIsStable(t *testing.T) {
	c := serve(t, "v1")
	var got string
	err := c.CallJSON(ctx(t), "objectstore.v1.ObjectStore/Exists", []byte(`{"key":"yes"}`), true, func(b []byte) error {
		got = string(b)
		return nil
	})
	if want := "{\n  \"exists\": true\n}"; err != nil || got != want {
		t.Errorf("got %q, %v; want %q", got, err, want)
	}
}

func TestErrorsSayWhatExists(t *testing.T) {
	c := serve(t, "v1")
	tests := []struct {
		method, req string
		want        []string
		is          error
	}{
		{method: "objectstore.v1.Nope/Get", want: []string{`no service "objectstore.v1.Nope"`, "objectstore.v1.ObjectStore", "grpc.reflection.v1.ServerReflection"}},
		{method: "objectstore.v1.ObjectStore/Fetch", want: []string{`no method "Fetch"`, "Delete, Exists, Get, Init, List, Put"}},
		{method: "Exists", want: []string{"not a method name", "SERVICE/METHOD"}},
		{method: "a b/c", want: []string{"not a method name"}},
		{method: "objectstore.v1.ObjectStore/Exists", req: `{"key": }`, want: []string{"objectstore.v1.ExistsRequest", "line 1:9"}},
		{method: "objectstore.v1.ObjectStore/Exists", req: `{"name": "x"}`, want: []string{`unknown field "name"`, "has fields: key"}},
		{method: "objectstore.v1.ObjectStore/Exists", req: `{"key": 3}`, want: []string{"key", "3"}},
		{method: "objectstore.v1.ObjectStore/Put", want: []string{"objectstore.v1.ObjectStore.Put", "client-streaming"}, is: reflectcall.ErrClientStreaming},
	}
	for _, tt := range tests {
		_, err := callJSON(t, c, tt.method, tt.req)
		if err == nil {
			t.Errorf("%s %s: no error", tt.method, tt.req)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s %s: error lacks %q: %v", tt.method, tt.req, w, err)
			}
		}
		if tt.is != nil && !errors.Is(err, tt.is) {
			t.Errorf("%s: error is not %v: %v", tt.method, tt.is, err)
		}
	}
}

func TestNoReflection(t *testing.T) {
	c := serve(t)
	_, err := c.Method(ctx(t), "objectstore.v1.ObjectStore/Exists")
	if err == nil || !strings.Contains(err.Error(), "does not offer server reflection") {
		t.Errorf("got %v", err)
	}
}

func TestParseMethodName(t *testing.T) {
	for in, want := range map[string]string{
		"tfplugin6.Provider/GetProviderSchema":  "tfplugin6.Provider GetProviderSchema",
		"/tfplugin6.Provider/GetProviderSchema": "tfplugin6.Provider GetProviderSchema",
		"tfplugin6.Provider.GetProviderSchema":  "tfplugin6.Provider GetProviderSchema",
		"Svc/M":                                 "Svc M",
	} {
		s, m, err := reflectcall.ParseMethodName(in)
		if err != nil || s+" "+m != want {
			t.Errorf("ParseMethodName(%q) = %q %q %v", in, s, m, err)
		}
	}
	for _, bad := range []string{"", "/", "Svc/", "/M", "a/b/c", "1x.Svc/M", "Svc/M-1"} {
		if _, _, err := reflectcall.ParseMethodName(bad); err == nil {
			t.Errorf("ParseMethodName(%q) succeeded", bad)
		}
	}
}
