package traceexport

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/plugkit/plugkit/internal/traceenv"
	"github.com/plugkit/plugkit/internal/tracehook"
)

func init() { tracehook.Provider = provider }

// provider is an SDK provider sending spans to the exporters the
// environment names (in batches, and whenever the plugin is idle; to the
// console as each ends), with the resource it describes (OTEL_SERVICE_NAME,
// which a plugkit host sets to the plugin's name, and
// OTEL_RESOURCE_ATTRIBUTES); nil for none. The first export error goes
// to report, once for all the exporters.
func provider(ctx context.Context, lookup func(string) (string, bool), report func(error)) (trace.TracerProvider, func(context.Context) error, error) {
	exps, err := traceenv.Exporters(ctx, lookup, nil) // console: the process's stdout, which the host logs
	if err != nil || len(exps) == 0 {
		return nil, nil, err
	}
	once := &sync.Once{}
	opts := []sdktrace.TracerProviderOption{sdktrace.WithResource(resource.Default())}
	for _, exp := range exps {
		r := &reporting{SpanExporter: exp, once: once, report: report}
		if _, console := exp.(*stdouttrace.Exporter); console {
			// A local write: each span is written as it ends, so that a
			// plugin killed (or crashed) loses none of those it wrote.
			opts = append(opts, sdktrace.WithSyncer(r))
			continue
		}
		opts = append(opts, sdktrace.WithSpanProcessor(newIdleExport(sdktrace.NewBatchSpanProcessor(r))))
	}
	tp := sdktrace.NewTracerProvider(opts...)
	return tp, tp.Shutdown, nil
}

// reporting gives the first error of its exports to report, once, and
// none to the SDK, which would hand each failed batch to OpenTelemetry's
// global error handler: a line on the plugin's standard error, and so a
// record of the host's log, per batch for as long as the collector is
// unreachable.
type reporting struct {
	sdktrace.SpanExporter
	once   *sync.Once
	report func(error)
}

func (r *reporting) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if err := r.SpanExporter.ExportSpans(ctx, spans); err != nil {
		r.once.Do(func() { r.report(err) })
	}
	return nil
}

// idleInterval is the least time between two of idleExport's exports.
const idleInterval = 100 * time.Millisecond

// idleFlushTimeout bounds one of idleExport's exports.
const idleFlushTimeout = 5 * time.Second

// idleExport is the batch processor of an exporter over the network
// that also exports whenever the plugin has no span open: when it is
// idle between calls. A batch otherwise waits up to
// OTEL_BSP_SCHEDULE_DELAY (5 s by default), and a plugin killed or
// crashed in the meantime loses it: the spans of calls that ended long
// before. Such exports run one at a time, at most one per idleInterval;
// the spans that end meanwhile go in the next. A plugin that always has a
// span open (a long stream) exports on the batch schedule alone.
type idleExport struct {
	sdktrace.SpanProcessor // the batch processor
	open                   atomic.Int64
	kick                   chan struct{} // an export is due
	done                   chan struct{} // closed by Shutdown
	stop                   sync.Once
}

func newIdleExport(batch sdktrace.SpanProcessor) *idleExport {
	p := &idleExport{SpanProcessor: batch, kick: make(chan struct{}, 1), done: make(chan struct{})}
	go p.run()
	return p
}

func (p *idleExport) OnStart(ctx context.Context, s sdktrace.ReadWriteSpan) {
	p.open.Add(1)
	p.SpanProcessor.OnStart(ctx, s)
}

func (p *idleExport) OnEnd(s sdktrace.ReadOnlySpan) {
	p.SpanProcessor.OnEnd(s)
	if p.open.Add(-1) == 0 {
		select {
		case p.kick <- struct{}{}:
		default: // one is due already
		}
	}
}

// run exports what the batch holds each time the plugin becomes idle,
// until Shutdown.
func (p *idleExport) run() {
	for {
		select {
		case <-p.done:
			return
		case <-p.kick:
		}
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), idleFlushTimeout)
		p.SpanProcessor.ForceFlush(ctx) // a failure is reported by the exporter (reporting)
		cancel()
		wait := time.NewTimer(idleInterval - time.Since(start))
		select {
		case <-p.done:
			wait.Stop()
			return
		case <-wait.C:
		}
	}
}

func (p *idleExport) Shutdown(ctx context.Context) error {
	p.stop.Do(func() { close(p.done) })
	return p.SpanProcessor.Shutdown(ctx)
}
