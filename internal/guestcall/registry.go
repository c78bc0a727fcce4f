package guestcall

import (
	"errors"
	"fmt"
	"reflect"
	"unsafe"

	"google.golang.org/grpc"
)

// service is one service registered on a *grpc.Server: its
// implementation and its methods, unary ones wrapped by grpc-go as
// stream handlers that run the server's unary interceptors.
type service struct {
	impl    any
	methods map[string]*grpc.StreamDesc
}

// serverParts is what a Server takes from a *grpc.Server.
type serverParts struct {
	services  map[string]service
	streamInt grpc.StreamServerInterceptor
	unknown   *grpc.StreamDesc
	maxRecv   int
	maxSend   int
}

// errUnsupported reports a *grpc.Server this package cannot serve as
// grpc-go would: its caller serves HTTP/2 only.
var errUnsupported = errors.New("guestcall: the server has options this path does not carry")

// readServer takes the registered services, the stream interceptor and
// the message size limits from srv, whose fields grpc-go does not export
// (it keeps no public way to dispatch to a registered handler). Any
// field not where this grpc-go release keeps it, or an option this path
// does not carry (a codec, compressors, credentials, stats handlers, a
// stream wrapper), is an error: the guest then serves over HTTP/2 alone.
func readServer(srv *grpc.Server) (p serverParts, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %v", errUnsupported, r)
		}
	}()
	v := reflect.ValueOf(srv).Elem()
	opts := field(v, "opts")
	for _, name := range []string{"creds", "codec", "cp", "dc", "streamWrapper", "binaryLogger"} {
		if f := field(opts, name); !f.IsZero() {
			return p, fmt.Errorf("%w: %s is set", errUnsupported, name)
		}
	}
	if f := field(opts, "statsHandlers"); f.Len() > 0 {
		return p, fmt.Errorf("%w: stats handlers are set", errUnsupported)
	}
	if f := field(v, "statsHandler"); !f.IsNil() {
		return p, fmt.Errorf("%w: a stats handler is set", errUnsupported)
	}
	p.streamInt, _ = field(opts, "streamInt").Interface().(grpc.StreamServerInterceptor)
	p.unknown, _ = field(opts, "unknownStreamDesc").Interface().(*grpc.StreamDesc)
	p.maxRecv = int(field(opts, "maxReceiveMessageSize").Int())
	p.maxSend = int(field(opts, "maxSendMessageSize").Int())
	services := field(v, "services")
	p.services = make(map[string]service, services.Len())
	iter := services.MapRange()
	for iter.Next() {
		info := iter.Value().Elem()
		methods, ok := field(info, "streams").Interface().(map[string]*grpc.StreamDesc)
		if !ok {
			return p, fmt.Errorf("%w: no stream descriptors", errUnsupported)
		}
		p.services[iter.Key().String()] = service{impl: field(info, "serviceImpl").Interface(), methods: methods}
	}
	return p, nil
}

// field is v's field name, readable although unexported; it panics when
// there is none (readServer recovers).
func field(v reflect.Value, name string) reflect.Value {
	f := v.FieldByName(name)
	if !f.IsValid() {
		panic("no field " + name)
	}
	return reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem()
}
