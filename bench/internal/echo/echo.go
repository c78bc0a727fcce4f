package echo

import (
	"context"
	"errors"
	"io"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// ServiceName is the gRPC name of the service.
const ServiceName = "plugkit.bench.Echo"

// Method names, as gRPC full method names.
const (
	MethodEcho     = "/" + ServiceName + "/Echo"
	MethodDownload = "/" + ServiceName + "/Download"
)

// ChunkSize is the size of one Download message: 1 MiB.
const ChunkSize = 1 << 20

// chunk is the one buffer Download sends, again and again, made at the
// first Download: a server that serves none (the start and unary
// benchmarks) does not pay for zeroing 1 MiB at start, which a
// WebAssembly guest's init does at about 2 ms.
var chunk = sync.OnceValue(func() *wrapperspb.BytesValue { return wrapperspb.Bytes(make([]byte, ChunkSize)) })

// Register adds the echo service to s.
func Register(s grpc.ServiceRegistrar) { s.RegisterService(&desc, server{}) }

type server struct{}

type echoServer interface{}

var desc = grpc.ServiceDesc{
	ServiceName: ServiceName,
	HandlerType: (*echoServer)(nil),
	Methods: []grpc.MethodDesc{{
		MethodName: "Echo",
		Handler: func(_ any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
			in := new(wrapperspb.BytesValue)
			if err := dec(in); err != nil {
				return nil, err
			}
			return in, nil
		},
	}},
	Streams: []grpc.StreamDesc{{
		StreamName:    "Download",
		ServerStreams: true,
		Handler: func(_ any, stream grpc.ServerStream) error {
			n := new(wrapperspb.Int64Value)
			if err := stream.RecvMsg(n); err != nil {
				return err
			}
			for i := int64(0); i < n.GetValue(); i++ {
				if err := stream.SendMsg(chunk()); err != nil {
					return err
				}
			}
			return nil
		},
	}},
}

// Echo sends payload and returns what came back.
func Echo(ctx context.Context, cc grpc.ClientConnInterface, payload []byte) ([]byte, error) {
	out := new(wrapperspb.BytesValue)
	if err := cc.Invoke(ctx, MethodEcho, wrapperspb.Bytes(payload), out); err != nil {
		return nil, err
	}
	return out.GetValue(), nil
}

// Download asks for n chunks of ChunkSize bytes and returns how many bytes
// arrived.
func Download(ctx context.Context, cc grpc.ClientConnInterface, n int64) (int64, error) {
	stream, err := cc.NewStream(ctx, &desc.Streams[0], MethodDownload)
	if err != nil {
		return 0, err
	}
	if err := stream.SendMsg(wrapperspb.Int64(n)); err != nil {
		return 0, err
	}
	if err := stream.CloseSend(); err != nil {
		return 0, err
	}
	var total int64
	msg := new(wrapperspb.BytesValue)
	for {
		if err := stream.RecvMsg(msg); err != nil {
			if errors.Is(err, io.EOF) {
				return total, nil
			}
			return total, err
		}
		total += int64(len(msg.GetValue()))
	}
}
