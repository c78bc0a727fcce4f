package traceenv

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

func lookupIn(env map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := env[k]; return v, ok }
}

// TestNames: OTEL_TRACES_EXPORTER is a comma-separated, case-insensitive
// list; unset or blank means otlp, none names nothing, and an exporter
// plugkit does not build is an error naming those it does.
func TestNames(t *testing.T) {
	for _, tc := range []struct {
		value   string
		set     bool
		want    string
		wantErr string
	}{
		{set: false, want: "otlp"},
		{value: " ", set: true, want: "otlp"},
		{value: "none", set: true, want: ""},
		{value: "console", set: true, want: "console"},
		{value: "OTLP, Console,otlp", set: true, want: "otlp,console"},
		{value: "console,none", set: true, want: "console"},
		{value: "zipkin", set: true, wantErr: `"zipkin", which plugkit does not build: use otlp, console or none`},
		{value: "otlp,jaeger", set: true, wantErr: `"jaeger"`},
	} {
		env := map[string]string{}
		if tc.set {
			env[EnvExporter] = tc.value
		}
		names, err := Names(lookupIn(env))
		switch {
		case tc.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), EnvExporter) {
				t.Errorf("%s=%q: error %v, want one naming the variable and containing %q", EnvExporter, tc.value, err, tc.wantErr)
			}
		case err != nil:
			t.Errorf("%s=%q: %v", EnvExporter, tc.value, err)
		case strings.Join(names, ",") != tc.want:
			t.Errorf("%s=%q: exporters %q, want %q", EnvExporter, tc.value, names, tc.want)
		}
	}
}

// TestProtocol: the traces' protocol variable wins over the general one,
// http/protobuf is the default, and a protocol the exporters do not speak
// is an error naming the variable that set it.
func TestProtocol(t *testing.T) {
	for _, tc := range []struct {
		env     map[string]string
		want    string
		wantErr string
	}{
		{env: nil, want: "http/protobuf"},
		{env: map[string]string{EnvProtocol: "grpc"}, want: "grpc"},
		{env: map[string]string{EnvProtocol: "grpc", EnvTracesProtocol: "http/protobuf"}, want: "http/protobuf"},
		{env: map[string]string{EnvProtocol: "http/protobuf", EnvTracesProtocol: " GRPC "}, want: "grpc"},
		{env: map[string]string{EnvTracesProtocol: "http/json"}, wantErr: EnvTracesProtocol + `="http/json" is not an OTLP protocol the trace exporter speaks: use grpc or http/protobuf`},
		{env: map[string]string{EnvProtocol: "udp"}, wantErr: EnvProtocol + `="udp"`},
	} {
		got, err := Protocol(lookupIn(tc.env))
		switch {
		case tc.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%v: error %v, want one containing %q", tc.env, err, tc.wantErr)
			}
		case err != nil:
			t.Errorf("%v: %v", tc.env, err)
		case got != tc.want:
			t.Errorf("%v: protocol %q, want %q", tc.env, got, tc.want)
		}
	}
}

// TestExporters: each name makes its exporter, otlp on the protocol the
// environment chose; none makes none; a bad protocol makes nothing.
func TestExporters(t *testing.T) {
	ctx := context.Background()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1") // never dialled: nothing is exported
	for _, tc := range []struct {
		env  map[string]string
		want []string // per exporter, a string its description contains
	}{
		{env: map[string]string{EnvExporter: "none"}, want: nil},
		{env: map[string]string{EnvExporter: "console"}, want: []string{"stdouttrace"}},
		{env: map[string]string{EnvExporter: "otlp", EnvProtocol: "grpc"}, want: []string{"otlptracegrpc"}},
		{env: map[string]string{}, want: []string{"otlptracehttp"}},
		{env: map[string]string{EnvExporter: "console,otlp", EnvTracesProtocol: "grpc"}, want: []string{"stdouttrace", "otlptracegrpc"}},
	} {
		exps, err := Exporters(ctx, lookupIn(tc.env), nil)
		if err != nil {
			t.Errorf("%v: %v", tc.env, err)
			continue
		}
		var got []string
		for _, exp := range exps {
			desc := fmt.Sprintf("%T", exp)
			if m, ok := exp.(interface{ MarshalLog() any }); ok {
				desc += fmt.Sprint(m.MarshalLog()) // otlptrace's names its client
			}
			got = append(got, desc)
			exp.Shutdown(ctx)
		}
		if len(got) != len(tc.want) {
			t.Errorf("%v: exporters %q, want %q", tc.env, got, tc.want)
			continue
		}
		for i := range got {
			if !strings.Contains(got[i], tc.want[i]) {
				t.Errorf("%v: exporter %d is %s, want %s", tc.env, i, got[i], tc.want[i])
			}
		}
	}
	exps, err := Exporters(ctx, lookupIn(map[string]string{EnvExporter: "console,otlp", EnvProtocol: "http/json"}), nil)
	if err == nil || len(exps) != 0 {
		t.Errorf("http/json: exporters %v, error %v; want none and an error", exps, err)
	}
}

// TestConsoleWriter: the console exporter writes its spans to the
// writer given.
func TestConsoleWriter(t *testing.T) {
	var out bytes.Buffer
	exps, err := Exporters(context.Background(), lookupIn(map[string]string{EnvExporter: "console"}), &out)
	if err != nil || len(exps) != 1 {
		t.Fatalf("exporters %v, error %v; want one", exps, err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exps[0]))
	_, span := tp.Tracer("test").Start(context.Background(), "written span")
	span.End()
	tp.Shutdown(context.Background())
	if !strings.Contains(out.String(), `"Name":"written span"`) {
		t.Errorf("console output %q lacks the span", out.String())
	}
}
