package guestcall_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding/gzip"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"

	"github.com/plugkit/plugkit/internal/guestcall"
)

// service answers as each test asks, and records how each call came.
type service struct {
	testpb.UnimplementedTestServiceServer
	framed   atomic.Int64 // calls that came without HTTP/2
	http2    atomic.Int64
	ended    chan error // a waiting call's end: its context's error
	deadline chan time.Duration
}

func (s *service) count(ctx context.Context) {
	if strings.Contains(fmt.Sprintf("%T", grpc.ServerTransportStreamFromContext(ctx)), "guestcall") {
		s.framed.Add(1)
	} else {
		s.http2.Add(1)
	}
}

func (s *service) UnaryCall(ctx context.Context, req *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
	s.count(ctx)
	md, _ := metadata.FromIncomingContext(ctx)
	if v := md.Get("echo-in"); len(v) > 0 {
		grpc.SetHeader(ctx, metadata.Pairs("h-out", v[0], "bin-bin", "\x00\xff"))
		grpc.SetTrailer(ctx, metadata.Pairs("t-out", v[0]))
	}
	if dl, ok := ctx.Deadline(); ok && s.deadline != nil {
		s.deadline <- time.Until(dl)
	}
	if req.ResponseSize < 0 {
		<-ctx.Done()
		s.ended <- ctx.Err()
		return nil, ctx.Err()
	}
	if rs := req.ResponseStatus; rs != nil {
		st, err := status.New(codes.Code(rs.Code), rs.Message).WithDetails(&testpb.Payload{Body: []byte("detail")})
		if err != nil {
			return nil, err
		}
		return nil, st.Err()
	}
	return &testpb.SimpleResponse{Payload: &testpb.Payload{Body: make([]byte, req.ResponseSize)}, Username: string(req.GetPayload().GetBody())}, nil
}

func (s *service) StreamingOutputCall(req *testpb.StreamingOutputCallRequest, ss grpc.ServerStreamingServer[testpb.StreamingOutputCallResponse]) error {
	s.count(ss.Context())
	ss.SendHeader(metadata.Pairs("h-out", "stream"))
	for _, p := range req.ResponseParameters {
		if err := ss.Send(&testpb.StreamingOutputCallResponse{Payload: &testpb.Payload{Body: make([]byte, p.Size)}}); err != nil {
			return err
		}
	}
	ss.SetTrailer(metadata.Pairs("t-out", "stream"))
	return nil
}

func (s *service) StreamingInputCall(ss grpc.ClientStreamingServer[testpb.StreamingInputCallRequest, testpb.StreamingInputCallResponse]) error {
	s.count(ss.Context())
	total := 0
	for {
		m, err := ss.Recv()
		if err == io.EOF {
			return ss.SendAndClose(&testpb.StreamingInputCallResponse{AggregatedPayloadSize: int32(total)})
		}
		if err != nil {
			return err
		}
		total += len(m.GetPayload().GetBody())
	}
}

func (s *service) FullDuplexCall(ss grpc.BidiStreamingServer[testpb.StreamingOutputCallRequest, testpb.StreamingOutputCallResponse]) error {
	s.count(ss.Context())
	for {
		m, err := ss.Recv()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if err := ss.Send(&testpb.StreamingOutputCallResponse{Payload: m.Payload}); err != nil {
			return err
		}
	}
}

// setup serves svc on a loopback listener split by a guestcall.Server,
// and returns a client whose calls go over call streams.
func setup(t *testing.T, svc *service, sopts []grpc.ServerOption, copts ...grpc.DialOption) testpb.TestServiceClient {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(sopts...)
	testpb.RegisterTestServiceServer(srv, svc)
	calls, err := guestcall.NewServer(srv)
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(calls.Split(ln))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		calls.Shutdown(ctx)
		srv.Stop()
	})
	// Unary calls travel on a connection of their own here, whose
	// session bytes (none) each end reads as its session would.
	hostRaw, guestRaw := net.Pipe()
	t.Cleanup(func() { hostRaw.Close() })
	go io.Copy(io.Discard, calls.Wrap(guestRaw))
	h := guestcall.NewHost(hostRaw, 4<<20)
	go io.Copy(io.Discard, h.Conn())
	open := func() (net.Conn, error) { return net.Dial("tcp", ln.Addr().String()) }
	opts := append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, copts...)
	opts = append(opts, h.DialOptions(open)...)
	cc, err := grpc.NewClient("passthrough:///"+ln.Addr().String(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return testpb.NewTestServiceClient(cc)
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func TestUnaryMetadataAndStatus(t *testing.T) {
	svc := &service{}
	c := setup(t, svc, nil)
	ctx := metadata.AppendToOutgoingContext(testCtx(t), "echo-in", "v1")
	var header, trailer metadata.MD
	resp, err := c.UnaryCall(ctx, &testpb.SimpleRequest{ResponseSize: 10, Payload: &testpb.Payload{Body: []byte("who")}}, grpc.Header(&header), grpc.Trailer(&trailer))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Payload.Body) != 10 || resp.Username != "who" {
		t.Errorf("answer %v", resp)
	}
	if got := header.Get("h-out"); len(got) != 1 || got[0] != "v1" {
		t.Errorf("header %v", header)
	}
	if got := header.Get("bin-bin"); len(got) != 1 || got[0] != "\x00\xff" {
		t.Errorf("binary header %v", header)
	}
	if got := trailer.Get("t-out"); len(got) != 1 || got[0] != "v1" {
		t.Errorf("trailer %v", trailer)
	}
	_, err = c.UnaryCall(ctx, &testpb.SimpleRequest{ResponseStatus: &testpb.EchoStatus{Code: int32(codes.FailedPrecondition), Message: "no way"}})
	st := status.Convert(err)
	if st.Code() != codes.FailedPrecondition || st.Message() != "no way" || len(st.Details()) != 1 {
		t.Fatalf("status %v, details %v", st, st.Details())
	}
	if d, ok := st.Details()[0].(*testpb.Payload); !ok || string(d.Body) != "detail" {
		t.Errorf("detail %v", st.Details()[0])
	}
	if svc.framed.Load() != 2 || svc.http2.Load() != 0 {
		t.Errorf("%d calls framed, %d over HTTP/2; want 2, 0", svc.framed.Load(), svc.http2.Load())
	}
}

func TestUnsupportedOptionFallsBackToHTTP2(t *testing.T) {
	svc := &service{}
	c := setup(t, svc, nil)
	if _, err := c.UnaryCall(testCtx(t), &testpb.SimpleRequest{ResponseSize: 1}, grpc.UseCompressor(gzip.Name)); err != nil {
		t.Fatal(err)
	}
	if svc.framed.Load() != 0 || svc.http2.Load() != 1 {
		t.Errorf("%d calls framed, %d over HTTP/2; want 0, 1", svc.framed.Load(), svc.http2.Load())
	}
}

func TestStreams(t *testing.T) {
	svc := &service{}
	c := setup(t, svc, nil)
	ctx := testCtx(t)
	out, err := c.StreamingOutputCall(ctx, &testpb.StreamingOutputCallRequest{ResponseParameters: []*testpb.ResponseParameters{{Size: 1}, {Size: 2}, {Size: 3}}})
	if err != nil {
		t.Fatal(err)
	}
	h, err := out.Header()
	if err != nil || len(h.Get("h-out")) != 1 {
		t.Fatalf("header %v, %v", h, err)
	}
	for i := 1; i <= 3; i++ {
		m, err := out.Recv()
		if err != nil || len(m.Payload.Body) != i {
			t.Fatalf("message %d: %v, %v", i, m, err)
		}
	}
	if _, err := out.Recv(); err != io.EOF {
		t.Fatalf("end: %v", err)
	}
	if tr := out.Trailer(); len(tr.Get("t-out")) != 1 {
		t.Errorf("trailer %v", tr)
	}
	in, err := c.StreamingInputCall(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		if err := in.Send(&testpb.StreamingInputCallRequest{Payload: &testpb.Payload{Body: make([]byte, 100)}}); err != nil {
			t.Fatal(err)
		}
	}
	sum, err := in.CloseAndRecv()
	if err != nil || sum.AggregatedPayloadSize != 500 {
		t.Fatalf("sum %v, %v", sum, err)
	}
	bidi, err := c.FullDuplexCall(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if err := bidi.Send(&testpb.StreamingOutputCallRequest{Payload: &testpb.Payload{Body: []byte{byte(i)}}}); err != nil {
			t.Fatal(err)
		}
		m, err := bidi.Recv()
		if err != nil || m.Payload.Body[0] != byte(i) {
			t.Fatalf("echo %d: %v, %v", i, m, err)
		}
	}
	bidi.CloseSend()
	if _, err := bidi.Recv(); err != io.EOF {
		t.Fatalf("end: %v", err)
	}
	if svc.framed.Load() != 3 || svc.http2.Load() != 0 {
		t.Errorf("%d calls framed, %d over HTTP/2; want 3, 0", svc.framed.Load(), svc.http2.Load())
	}
}

func TestDeadlineAndCancel(t *testing.T) {
	svc := &service{ended: make(chan error, 1), deadline: make(chan time.Duration, 1)}
	c := setup(t, svc, nil)
	ctx, cancel := context.WithTimeout(testCtx(t), 300*time.Millisecond)
	defer cancel()
	_, err := c.UnaryCall(ctx, &testpb.SimpleRequest{ResponseSize: -1})
	if status.Code(err) != codes.DeadlineExceeded {
		t.Errorf("a call past its deadline: %v", err)
	}
	if d := <-svc.deadline; d <= 0 || d > 300*time.Millisecond {
		t.Errorf("the handler's deadline is %v away", d)
	}
	// The host's cancel at its deadline may reach the handler before the
	// handler's own deadline does, as over HTTP/2 (RST_STREAM).
	if err := <-svc.ended; !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
		t.Errorf("the handler's context ended with %v", err)
	}
	ctx, cancel = context.WithCancel(testCtx(t))
	done := make(chan error, 1)
	go func() {
		_, err := c.UnaryCall(ctx, &testpb.SimpleRequest{ResponseSize: -1})
		done <- err
	}()
	<-svc.deadline
	cancel()
	if err := <-done; status.Code(err) != codes.Canceled {
		t.Errorf("a cancelled call: %v", err)
	}
	if err := <-svc.ended; !errors.Is(err, context.Canceled) {
		t.Errorf("the handler's context ended with %v", err)
	}
}

func TestMessageSizeLimits(t *testing.T) {
	svc := &service{}
	c := setup(t, svc, []grpc.ServerOption{grpc.MaxRecvMsgSize(1000), grpc.MaxSendMsgSize(2000)})
	ctx := testCtx(t)
	_, err := c.UnaryCall(ctx, &testpb.SimpleRequest{Payload: &testpb.Payload{Body: make([]byte, 1500)}})
	if status.Code(err) != codes.ResourceExhausted {
		t.Errorf("a request over the server's limit: %v", err)
	}
	_, err = c.UnaryCall(ctx, &testpb.SimpleRequest{ResponseSize: 3000})
	if status.Code(err) != codes.ResourceExhausted {
		t.Errorf("an answer over the server's limit: %v", err)
	}
	_, err = c.UnaryCall(ctx, &testpb.SimpleRequest{ResponseSize: 1500}, grpc.MaxCallRecvMsgSize(1000))
	if status.Code(err) != codes.ResourceExhausted {
		t.Errorf("an answer over the call's limit: %v", err)
	}
	_, err = c.UnaryCall(ctx, &testpb.SimpleRequest{Payload: &testpb.Payload{Body: make([]byte, 500)}}, grpc.MaxCallSendMsgSize(100))
	if status.Code(err) != codes.ResourceExhausted {
		t.Errorf("a request over the call's limit: %v", err)
	}
	if _, err := c.UnaryCall(ctx, &testpb.SimpleRequest{ResponseSize: 1500}); err != nil {
		t.Errorf("a call within the limits: %v", err)
	}
}

func TestUnknownMethod(t *testing.T) {
	c := setup(t, &service{}, nil)
	_, err := c.UnimplementedCall(testCtx(t), &testpb.Empty{})
	if status.Code(err) != codes.Unimplemented {
		t.Errorf("%v", err)
	}
}

func TestInterceptorsRun(t *testing.T) {
	var serverUnary, serverStream, clientUnary atomic.Int64
	sopts := []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			serverUnary.Add(1)
			return h(ctx, req)
		}),
		grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			serverStream.Add(1)
			return h(srv, ss)
		}),
	}
	svc := &service{}
	c := setup(t, svc, sopts, grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		clientUnary.Add(1)
		return invoker(ctx, method, req, reply, cc, opts...)
	}))
	ctx := testCtx(t)
	if _, err := c.UnaryCall(ctx, &testpb.SimpleRequest{}); err != nil {
		t.Fatal(err)
	}
	s, err := c.StreamingOutputCall(ctx, &testpb.StreamingOutputCallRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Recv(); err != io.EOF {
		t.Fatal(err)
	}
	if serverUnary.Load() != 1 || serverStream.Load() != 1 || clientUnary.Load() != 1 || svc.framed.Load() != 2 {
		t.Errorf("interceptors ran: server unary %d, server stream %d, client unary %d; %d calls framed", serverUnary.Load(), serverStream.Load(), clientUnary.Load(), svc.framed.Load())
	}
}

// TestParallelUnaryCalls: unary calls share one lane; many at once, some
// cancelled on the way, each gets its own answer or its own status.
func TestParallelUnaryCalls(t *testing.T) {
	svc := &service{ended: make(chan error, 1000), deadline: make(chan time.Duration, 1000)}
	c := setup(t, svc, nil)
	ctx := testCtx(t)
	errs := make(chan error, 40)
	for g := range 40 {
		go func() {
			for i := range 20 {
				body := fmt.Sprintf("%d-%d", g, i)
				if i%5 == 4 { // a call cancelled while the guest holds it
					cctx, cancel := context.WithTimeout(ctx, time.Millisecond)
					_, err := c.UnaryCall(cctx, &testpb.SimpleRequest{ResponseSize: -1})
					cancel()
					if code := status.Code(err); code != codes.DeadlineExceeded {
						errs <- fmt.Errorf("a call past its deadline: %v", err)
						return
					}
					continue
				}
				resp, err := c.UnaryCall(ctx, &testpb.SimpleRequest{ResponseSize: int32(i), Payload: &testpb.Payload{Body: []byte(body)}})
				if err != nil || resp.Username != body || len(resp.Payload.Body) != i {
					errs <- fmt.Errorf("call %s: %v, %v", body, resp, err)
					return
				}
			}
			errs <- nil
		}()
	}
	for range 40 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// recorder is a client stats handler that counts what it is told.
type recorder struct{ begins, trailers, ends, failed atomic.Int64 }

func (r *recorder) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }
func (r *recorder) HandleRPC(_ context.Context, s stats.RPCStats) {
	switch s := s.(type) {
	case *stats.Begin:
		r.begins.Add(1)
	case *stats.InTrailer:
		r.trailers.Add(1)
	case *stats.End:
		r.ends.Add(1)
		if s.Error != nil {
			r.failed.Add(1)
		}
	}
}
func (r *recorder) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context { return ctx }
func (r *recorder) HandleConn(context.Context, stats.ConnStats)                       {}

// TestStatsHandlersSeeCalls: the host's stats handlers are told of each
// call that skips HTTP/2, its begin, the guest's trailer (a manager tells
// from it that the plugin answered a failed call) and its end.
func TestStatsHandlersSeeCalls(t *testing.T) {
	svc := &service{}
	rec := &recorder{}
	c := setup(t, svc, nil, grpc.WithStatsHandler(rec))
	ctx := testCtx(t)
	if _, err := c.UnaryCall(ctx, &testpb.SimpleRequest{}); err != nil {
		t.Fatal(err)
	}
	_, err := c.UnaryCall(ctx, &testpb.SimpleRequest{ResponseStatus: &testpb.EchoStatus{Code: int32(codes.NotFound)}})
	if status.Code(err) != codes.NotFound {
		t.Fatal(err)
	}
	s, err := c.StreamingOutputCall(ctx, &testpb.StreamingOutputCallRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Recv(); err != io.EOF {
		t.Fatal(err)
	}
	if rec.begins.Load() != 3 || rec.trailers.Load() != 3 || rec.ends.Load() != 3 || rec.failed.Load() != 1 || svc.framed.Load() != 3 {
		t.Errorf("begins %d, trailers %d, ends %d (failed %d); %d calls framed; want 3, 3, 3 (1), 3",
			rec.begins.Load(), rec.trailers.Load(), rec.ends.Load(), rec.failed.Load(), svc.framed.Load())
	}
}

// token is per-call credentials given as a dial option.
type token struct{}

func (token) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"token": "t"}, nil
}
func (token) RequireTransportSecurity() bool { return false }

// TestDialCredentialsKeepHTTP2: per-call credentials given as a dial
// option, which frames cannot carry, keep the calls on HTTP/2.
func TestDialCredentialsKeepHTTP2(t *testing.T) {
	svc := &service{}
	c := setup(t, svc, nil, grpc.WithPerRPCCredentials(token{}))
	if _, err := c.UnaryCall(testCtx(t), &testpb.SimpleRequest{}); err != nil {
		t.Fatal(err)
	}
	if svc.framed.Load() != 0 || svc.http2.Load() != 1 {
		t.Errorf("%d calls framed, %d over HTTP/2; want 0, 1", svc.framed.Load(), svc.http2.Load())
	}
}
