package host_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	objectstorev1 "github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v1"
	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/testutil"
)

// panicStore's Init, with config "panic", panics with its value on a
// goroutine of its own (the process dies); with "fake", writes a Go
// panic's report to standard error and lives on, or, with "exit" too,
// exits with that status a moment later.
type panicStore struct {
	objectstorev1.UnimplementedObjectStoreServer
}

func (panicStore) Init(_ context.Context, req *objectstorev1.InitRequest) (*objectstorev1.InitResponse, error) {
	cfg := req.GetConfig()
	if msg := cfg["panic"]; msg != "" {
		go explode(msg)
		time.Sleep(10 * time.Second)
	}
	if cfg["fake"] != "" {
		fmt.Fprint(os.NewFile(2, "stderr"), "panic: not really\n\ngoroutine 1 [running]:\nmain.pretend()\n\t/fake.go:1 +0x1\n\n")
		if code, err := strconv.Atoi(cfg["exit"]); err == nil {
			// A record of its logger: a real panic's report is the last
			// thing a Go process writes.
			fmt.Fprintln(os.NewFile(2, "stderr"), `{"@level":"info","@message":"still here"}`)
			go func() {
				time.Sleep(50 * time.Millisecond)
				os.Exit(code)
			}()
		}
	}
	return &objectstorev1.InitResponse{}, nil
}

func explode(msg string) { panic(msg) }

// eventLog collects a plugin's lifecycle events.
type eventLog struct {
	ch chan host.Event
}

func newEventLog() *eventLog { return &eventLog{ch: make(chan host.Event, 64)} }

func (l *eventLog) on(e host.Event) { l.ch <- e }

// next waits for the next event of type typ, skipping others.
func (l *eventLog) next(t *testing.T, typ host.EventType) host.Event {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case e := <-l.ch:
			if e.Type == typ {
				return e
			}
		case <-deadline:
			t.Fatalf("no %s event within 10s", typ)
		}
	}
}

// types drains the events seen so far.
func (l *eventLog) types() []host.EventType {
	var out []host.EventType
	for {
		select {
		case e := <-l.ch:
			out = append(out, e.Type)
		default:
			return out
		}
	}
}

// counter is the sum of the counter name's points whose attributes
// include want.
func counter(t *testing.T, r *sdkmetric.ManualReader, name string, want ...attribute.KeyValue) int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					if hasAll(p.Attributes, want) {
						n += p.Value
					}
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					if hasAll(p.Attributes, want) {
						n += int64(p.Count)
					}
				}
			}
		}
	}
	return n
}

func hasAll(set attribute.Set, want []attribute.KeyValue) bool {
	for _, kv := range want {
		if v, ok := set.Value(kv.Key); !ok || v != kv.Value {
			return false
		}
	}
	return true
}

// observed is a test plugin's config with events and metrics collected.
func observed(t *testing.T, mode string) (launchConfig, *eventLog, *sdkmetric.ManualReader) {
	cfg := config(t, mode)
	events, reader := newEventLog(), sdkmetric.NewManualReader()
	cfg.Telemetry = host.Telemetry{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)), OnEvent: events.on}
	return cfg, events, reader
}

func initPlugin(c *host.Client, config map[string]string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := objectstorev1.NewObjectStoreClient(c.Conn()).Init(ctx, &objectstorev1.InitRequest{Config: config})
	return err
}

func waitExit(t *testing.T, c *host.Client) {
	t.Helper()
	select {
	case <-c.Exited():
	case <-time.After(10 * time.Second):
		t.Fatal("the plugin did not exit")
	}
}

// TestEventsOfAStartAndStop: started (pid, major), ready, and an asked-for
// exit, as events and as metrics.
func TestEventsOfAStartAndStop(t *testing.T) {
	cfg, events, reader := observed(t, "kv")
	c := start(t, cfg)
	if e := events.next(t, host.EventStarted); e.Pid != c.Pid() || e.Major != 1 || e.Plugin != "test-kv" || e.Binary != cfg.Path {
		t.Errorf("started: %+v; want pid %d, major 1, the plugin's name and binary", e, c.Pid())
	}
	if e := events.next(t, host.EventReady); e.Duration <= 0 {
		t.Errorf("ready: %+v; want the time to start", e)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if e := events.next(t, host.EventExited); e.Unexpected || e.Pid == 0 {
		t.Errorf("exited: %+v; want an expected exit with the pid", e)
	}
	plugin := attribute.String("plugkit.plugin", "test-kv")
	if n := counter(t, reader, "plugkit.plugin.starts", plugin); n != 1 {
		t.Errorf("plugkit.plugin.starts = %d, want 1", n)
	}
	if n := counter(t, reader, "plugkit.plugin.start.duration", plugin); n != 1 {
		t.Errorf("plugkit.plugin.start.duration has %d points, want 1", n)
	}
	if n := counter(t, reader, "plugkit.plugin.exits", plugin, attribute.String("plugkit.exit.cause", "stopped")); n != 1 {
		t.Errorf("plugkit.plugin.exits{cause=stopped} = %d, want 1", n)
	}
}

// TestPanicIsTypedError: a plugin that dies of a panic is reported as a
// *PanicError with its message and the panicking goroutine's stack, in
// Close's error, the crashed event, the log and the exits metric.
func TestPanicIsTypedError(t *testing.T) {
	cfg, events, reader := observed(t, "panicky")
	var logs testutil.Buffer
	cfg.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
	c := start(t, cfg)
	if err := initPlugin(c, map[string]string{"panic": "the plugin's own boom"}); err == nil {
		t.Fatal("Init of a panicking plugin succeeded")
	}
	waitExit(t, c)
	var pe *host.PanicError
	if err := c.Close(); !errors.As(err, &pe) {
		t.Fatalf("Close: %v; want a *host.PanicError", err)
	}
	if pe.Message != "the plugin's own boom" || !strings.HasPrefix(pe.Stack, "goroutine ") || !strings.Contains(pe.Stack, "host_test.explode(") || strings.Contains(pe.Stack, "goroutine 1 ") {
		t.Errorf("PanicError message %q, stack:\n%s\nwant the message and the panicking goroutine's stack", pe.Message, pe.Stack)
	}
	e := events.next(t, host.EventCrashed)
	if ep, ok := e.Cause.(*host.PanicError); !ok || ep.Message != pe.Message || !e.Unexpected {
		t.Errorf("crashed event: %+v; want the PanicError", e)
	}
	if !strings.Contains(logs.String(), `"panic":"the plugin's own boom"`) || !strings.Contains(logs.String(), "host_test.explode(") {
		t.Errorf("log has no record of the panic with its stack:\n%s", logs.String())
	}
	if n := counter(t, reader, "plugkit.plugin.exits", attribute.String("plugkit.exit.cause", "panic")); n != 1 {
		t.Errorf("plugkit.plugin.exits{cause=panic} = %d, want 1", n)
	}
}

// TestFakePanicLineIsNoCrash: a plugin that writes a Go panic's report to
// its stderr without dying of it is not reported as a crash: stopped, it
// is a normal stop; exiting by itself later, even with the runtime's
// status 2, an unexpected exit without panic.
func TestFakePanicLineIsNoCrash(t *testing.T) {
	t.Run("lives on", func(t *testing.T) {
		cfg, events, _ := observed(t, "panicky")
		c := start(t, cfg)
		if err := initPlugin(c, map[string]string{"fake": "1"}); err != nil {
			t.Fatal(err)
		}
		if err := c.Close(); err != nil {
			t.Fatalf("Close: %v; want nil", err)
		}
		if e := events.next(t, host.EventExited); e.Unexpected || e.Cause != nil {
			t.Errorf("exited: %+v; want a normal stop", e)
		}
		for _, typ := range events.types() {
			if typ == host.EventCrashed {
				t.Error("a crashed event for a plugin that did not die")
			}
		}
	})
	t.Run("exits by itself", func(t *testing.T) {
		cfg, events, _ := observed(t, "panicky")
		c := start(t, cfg)
		if err := initPlugin(c, map[string]string{"fake": "1", "exit": "2"}); err != nil {
			t.Fatal(err)
		}
		waitExit(t, c)
		err := c.Close()
		var ue *host.ExitError
		var pe *host.PanicError
		if !errors.As(err, &ue) || !ue.InUse || errors.As(err, &pe) || ue.Panic != nil {
			t.Fatalf("Close: %v; want an ExitError (InUse) without panic", err)
		}
		if e := events.next(t, host.EventExited); !e.Unexpected || e.Status != "exit status 2" {
			t.Errorf("exited: %+v; want an unexpected exit with status 2", e)
		}
	})
}

// TestPinRefusalIsReported: a binary that does not match its pin is
// reported as an event and counted.
func TestPinRefusalIsReported(t *testing.T) {
	cfg, events, reader := observed(t, "kv")
	cfg.SHA256 = strings.Repeat("0", 64)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := host.Start(ctx, cfg.Command, cfg.Options); err == nil {
		t.Fatal("Start of a binary that does not match its pin succeeded")
	}
	var ce *host.ChecksumError
	if e := events.next(t, host.EventPinRefused); !errors.As(e.Cause, &ce) {
		t.Errorf("refused event: %+v; want the ChecksumError", e)
	}
	if n := counter(t, reader, "plugkit.plugin.pin_refusals", attribute.String("plugkit.plugin", "test-kv")); n != 1 {
		t.Errorf("plugkit.plugin.pin_refusals = %d, want 1", n)
	}
}

// TestKilledPluginExitIsReportedOnce: a plugin ended by Kill (as the
// manager ends a hung one) makes one exited event, expected, with its
// signal, when Close cleans up.
func TestKilledPluginExitIsReportedOnce(t *testing.T) {
	cfg, events, _ := observed(t, "kv")
	c := start(t, cfg)
	c.Kill()
	waitExit(t, c)
	if err := c.Close(); err != nil {
		t.Fatalf("Close after Kill: %v", err)
	}
	e := events.next(t, host.EventExited)
	if e.Unexpected || (runtime.GOOS != "windows" && e.Signal != "killed") {
		t.Errorf("exited: %+v; want an expected exit by SIGKILL", e)
	}
	for _, typ := range events.types() {
		if typ == host.EventExited || typ == host.EventCrashed {
			t.Errorf("a second exit event (%s)", typ)
		}
	}
}
