package reflectcall

import (
	"context"
	"errors"
	"fmt"
	"io"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	reflectionv1 "google.golang.org/grpc/reflection/grpc_reflection_v1"
	reflectionv1alpha "google.golang.org/grpc/reflection/grpc_reflection_v1alpha"
	"google.golang.org/grpc/status"
)

//lint:file-ignore SA1019 grpc.reflection.v1alpha is deprecated, and still the only reflection service older servers register: plugkit call falls back to it on purpose.

// errNotFound is a reflection error response with code NOT_FOUND.
var errNotFound = errors.New("not found")

// session is one reflection stream: a request, then its answer.
type session interface {
	listServices() ([]string, error)
	// fileContainingSymbol and fileByFilename return serialized
	// FileDescriptorProtos: the file asked for and, usually, its
	// dependencies not yet sent on this stream.
	fileContainingSymbol(symbol string) ([][]byte, error)
	fileByFilename(name string) ([][]byte, error)
}

// reflectionError turns an ErrorResponse into an error.
func reflectionError(code int32, msg string) error {
	if codes.Code(code) == codes.NotFound {
		return fmt.Errorf("%w: %s", errNotFound, msg)
	}
	return fmt.Errorf("server reflection error %s: %s", codes.Code(code), msg)
}

// v1 speaks grpc.reflection.v1.ServerReflection.
type v1 struct {
	stream grpc.BidiStreamingClient[reflectionv1.ServerReflectionRequest, reflectionv1.ServerReflectionResponse]
}

func (s v1) do(req *reflectionv1.ServerReflectionRequest) (*reflectionv1.ServerReflectionResponse, error) {
	if err := s.stream.Send(req); err != nil {
		if errors.Is(err, io.EOF) {
			// The server ended the stream; Recv says why.
			_, err = s.stream.Recv()
		}
		return nil, err
	}
	resp, err := s.stream.Recv()
	if err != nil {
		return nil, err
	}
	if e := resp.GetErrorResponse(); e != nil {
		return nil, reflectionError(e.GetErrorCode(), e.GetErrorMessage())
	}
	return resp, nil
}

func (s v1) listServices() ([]string, error) {
	resp, err := s.do(&reflectionv1.ServerReflectionRequest{MessageRequest: &reflectionv1.ServerReflectionRequest_ListServices{}})
	if err != nil {
		return nil, err
	}
	var names []string
	for _, svc := range resp.GetListServicesResponse().GetService() {
		names = append(names, svc.GetName())
	}
	return names, nil
}

func (s v1) fileContainingSymbol(symbol string) ([][]byte, error) {
	resp, err := s.do(&reflectionv1.ServerReflectionRequest{MessageRequest: &reflectionv1.ServerReflectionRequest_FileContainingSymbol{FileContainingSymbol: symbol}})
	if err != nil {
		return nil, err
	}
	return resp.GetFileDescriptorResponse().GetFileDescriptorProto(), nil
}

func (s v1) fileByFilename(name string) ([][]byte, error) {
	resp, err := s.do(&reflectionv1.ServerReflectionRequest{MessageRequest: &reflectionv1.ServerReflectionRequest_FileByFilename{FileByFilename: name}})
	if err != nil {
		return nil, err
	}
	return resp.GetFileDescriptorResponse().GetFileDescriptorProto(), nil
}

// v1alpha speaks grpc.reflection.v1alpha.ServerReflection, which older
// servers register alone.
type v1alpha struct {
	stream grpc.BidiStreamingClient[reflectionv1alpha.ServerReflectionRequest, reflectionv1alpha.ServerReflectionResponse]
}

func (s v1alpha) do(req *reflectionv1alpha.ServerReflectionRequest) (*reflectionv1alpha.ServerReflectionResponse, error) {
	if err := s.stream.Send(req); err != nil {
		if errors.Is(err, io.EOF) {
			_, err = s.stream.Recv()
		}
		return nil, err
	}
	resp, err := s.stream.Recv()
	if err != nil {
		return nil, err
	}
	if e := resp.GetErrorResponse(); e != nil {
		return nil, reflectionError(e.GetErrorCode(), e.GetErrorMessage())
	}
	return resp, nil
}

func (s v1alpha) listServices() ([]string, error) {
	resp, err := s.do(&reflectionv1alpha.ServerReflectionRequest{MessageRequest: &reflectionv1alpha.ServerReflectionRequest_ListServices{}})
	if err != nil {
		return nil, err
	}
	var names []string
	for _, svc := range resp.GetListServicesResponse().GetService() {
		names = append(names, svc.GetName())
	}
	return names, nil
}

func (s v1alpha) fileContainingSymbol(symbol string) ([][]byte, error) {
	resp, err := s.do(&reflectionv1alpha.ServerReflectionRequest{MessageRequest: &reflectionv1alpha.ServerReflectionRequest_FileContainingSymbol{FileContainingSymbol: symbol}})
	if err != nil {
		return nil, err
	}
	return resp.GetFileDescriptorResponse().GetFileDescriptorProto(), nil
}

func (s v1alpha) fileByFilename(name string) ([][]byte, error) {
	resp, err := s.do(&reflectionv1alpha.ServerReflectionRequest{MessageRequest: &reflectionv1alpha.ServerReflectionRequest_FileByFilename{FileByFilename: name}})
	if err != nil {
		return nil, err
	}
	return resp.GetFileDescriptorResponse().GetFileDescriptorProto(), nil
}

// openSession opens a reflection stream, v1 first, then v1alpha when the
// server lacks v1. The first request is made here so that Unimplemented
// shows; its answer (the service list) is returned. The stream lives
// until ctx ends.
func openSession(ctx context.Context, conn grpc.ClientConnInterface, preferAlpha bool) (session, []string, bool, error) {
	tryV1 := func() (session, []string, error) {
		st, err := reflectionv1.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
		if err != nil {
			return nil, nil, err
		}
		s := v1{st}
		names, err := s.listServices()
		return s, names, err
	}
	tryAlpha := func() (session, []string, error) {
		st, err := reflectionv1alpha.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
		if err != nil {
			return nil, nil, err
		}
		s := v1alpha{st}
		names, err := s.listServices()
		return s, names, err
	}
	if !preferAlpha {
		s, names, err := tryV1()
		if status.Code(err) != codes.Unimplemented {
			if err != nil {
				return nil, nil, false, fmt.Errorf("server reflection (grpc.reflection.v1): %w", err)
			}
			return s, names, false, nil
		}
	}
	s, names, err := tryAlpha()
	if err != nil {
		if status.Code(err) == codes.Unimplemented {
			return nil, nil, true, errors.New("the server does not offer server reflection (neither grpc.reflection.v1 nor v1alpha): its methods cannot be resolved by name")
		}
		return nil, nil, true, fmt.Errorf("server reflection (grpc.reflection.v1alpha): %w", err)
	}
	return s, names, true, nil
}
