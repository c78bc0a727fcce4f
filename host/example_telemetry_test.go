package host_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/plugkit/plugkit/host"
)

// ExampleTelemetry reports a plugin's metrics to Prometheus (served on
// /metrics), its calls' spans to a TracerProvider, and its crashes to a
// callback.
func ExampleTelemetry() {
	exporter, err := otelprom.New() // registers with prometheus.DefaultRegisterer
	if err != nil {
		log.Fatal(err)
	}
	http.Handle("/metrics", promhttp.Handler())
	go http.ListenAndServe("127.0.0.1:9464", nil)

	tp := sdktrace.NewTracerProvider() // add sdktrace.WithBatcher(an exporter)
	defer tp.Shutdown(context.Background())

	exe, _ := os.Executable()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := host.Start(ctx, host.Command{
		Path:   exe,
		Env:    []string{modeEnv + "=kv", "GORACE=atexit_sleep_ms=0"},
		Cookie: testCookie,
	}, host.Options{Versions: []int{1}, Telemetry: host.Telemetry{
		TracerProvider: tp,
		MeterProvider:  sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter)),
		OnEvent: func(e host.Event) {
			var p *host.PanicError
			if e.Type == host.EventCrashed && errors.As(e.Cause, &p) {
				fmt.Fprintf(os.Stderr, "plugin %s panicked: %s\n%s\n", e.Plugin, p.Message, p.Stack)
			}
		},
	}})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
}
