package manager_test

import (
	"bufio"
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.opentelemetry.io/otel/attribute"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	objectstorev2 "github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v2"
	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/testutil"
	"github.com/plugkit/plugkit/manager"
)

// promServer serves a manager's metrics as docs/observability.md sets
// them up: OpenTelemetry's Prometheus exporter, scraped through
// promhttp (on a registry of the test's own).
func promServer(t *testing.T) (host.Telemetry, string) {
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	t.Cleanup(srv.Close)
	return host.Telemetry{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))}, srv.URL
}

// scrape gets url, parses it with Prometheus's own parser and lints it
// as promtool check metrics does (promlint): it must find nothing.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape: %s, %v", resp.Status, err)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("Prometheus's parser refuses the scrape: %v", err)
	}
	problems, err := promlint.New(bytes.NewReader(body)).Lint()
	if err != nil || len(problems) > 0 {
		t.Errorf("promlint: %v, %v", problems, err)
	}
	return mfs
}

// seriesOf lists the series of a scrape, a line each: the sample's
// name (with _bucket, _sum, _count for histograms) and labels, sorted.
func seriesOf(mfs map[string]*dto.MetricFamily) []string {
	var out []string
	for name, mf := range mfs {
		for _, m := range mf.GetMetric() {
			labels := labelsOf(m)
			if h := m.GetHistogram(); h != nil {
				for _, b := range h.GetBucket() {
					out = append(out, name+"_bucket"+withLabel(labels, "le", model.FloatString(b.GetUpperBound()).String()))
				}
				out = append(out, name+"_sum"+labels, name+"_count"+labels) // the parser keeps +Inf as a bucket
				continue
			}
			out = append(out, name+labels)
		}
	}
	slices.Sort(out)
	return out
}

func labelsOf(m *dto.Metric) string {
	var l []string
	for _, lp := range m.GetLabel() {
		l = append(l, lp.GetName()+"="+lp.GetValue())
	}
	slices.Sort(l)
	return "{" + strings.Join(l, ",") + "}"
}

func withLabel(labels, k, v string) string {
	l := strings.Split(strings.Trim(labels, "{}"), ",")
	l = append(l, k+"="+v)
	slices.Sort(l)
	return "{" + strings.Join(slices.DeleteFunc(l, func(s string) bool { return s == "" }), ",") + "}"
}

// crashAndRestart makes the plugin behind cl panic, and then a call that
// the manager answers by starting it anew.
func crashAndRestart(t *testing.T, cl objectstorev2.ObjectStoreClient) {
	t.Helper()
	if _, err := cl.Init(ctxT(t), &objectstorev2.InitRequest{Config: map[string]string{"panic": "crash"}}); err == nil {
		t.Fatal("Init that panics the plugin succeeded")
	}
	if _, err := cl.Exists(ctxT(t), &objectstorev2.ExistsRequest{Key: "k"}); err != nil {
		t.Fatalf("Exists after the crash: %v", err)
	}
}

// TestPrometheusSeriesDoNotGrowWithRestarts (issue 40 points 4 to 6):
// scraped through promhttp and read by Prometheus's parser, the series
// of a plugin restarted again and again are the same after two restarts
// and after five (no label takes a value per process, as the socket
// path in server_address did); the discovery's launch to describe the
// binary makes none (it has no version); the start-duration histogram
// has bounds from 1 ms to 10 s; and the example in
// docs/observability.md is what the scrape shows.
func TestPrometheusSeriesDoNotGrowWithRestarts(t *testing.T) {
	t.Parallel()
	tel, url := promServer(t)
	dir := testutil.TempDir(t)
	bin := writePlugin(t, dir, "fs", "fs 2")
	finder := &manager.Finder{Launch: host.Command{Cookie: cookie}, Host: host.Options{Telemetry: tel, Logger: slog.New(slog.DiscardHandler)}}
	m := newManager(t, manager.Config{Sources: []manager.Source{finder.Dirs(dir)}, Telemetry: tel, Logger: slog.New(slog.DiscardHandler), Restart: manager.RestartPolicy{Max: 20}})
	conn, _ := store(t, m, "fs")
	cl := objectstorev2.NewObjectStoreClient(conn)
	crashAndRestart(t, cl)
	crashAndRestart(t, cl)
	before := seriesOf(scrape(t, url))
	for range 3 {
		crashAndRestart(t, cl)
	}
	mfs := scrape(t, url)
	after := seriesOf(mfs)
	if !slices.Equal(before, after) {
		added := difference(after, before)
		t.Errorf("the series grew with 3 more restarts: %d then %d; %d new, such as:\n%s", len(before), len(after), len(added), strings.Join(added[:min(3, len(added))], "\n"))
	}
	for _, s := range after {
		if strings.HasPrefix(s, "plugkit_") && !strings.Contains(s, "plugkit_plugin_version=1.0.0") {
			t.Errorf("series without the plugin's version: %s", s)
		}
	}
	restarts := mfs["plugkit_plugin_restarts_total"]
	if restarts == nil || len(restarts.GetMetric()) != 1 || restarts.GetMetric()[0].GetCounter().GetValue() != 5 {
		t.Errorf("plugkit_plugin_restarts_total: %v; want one series counting 5", restarts)
	}
	// The path as a label value of the exposition: a Windows path's
	// backslashes escaped.
	label := strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(bin)
	replace := map[string]string{"/plugins/fs": label, "2.1.0": "1.0.0"}
	if name := filepath.Base(bin); name != "fs" {
		replace[`plugkit_plugin="fs"`] = `plugkit_plugin="` + name + `"` // fs.exe on Windows
	}
	checkDocExample(t, mfs, replace)
}

// difference is what a has that b has not.
func difference(a, b []string) []string {
	return slices.DeleteFunc(slices.Clone(a), func(s string) bool { return slices.Contains(b, s) })
}

// checkDocExample parses the example scrape of docs/observability.md
// (the text block after "Prometheus then shows") with Prometheus's
// parser and checks that each of its series is one of the scrape's, once
// its plugin's path and version are replaced as replace says (the doc's
// plugin is /plugins/fs, the test's a file in a temporary directory).
func checkDocExample(t *testing.T, scraped map[string]*dto.MetricFamily, replace map[string]string) {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "docs", "observability.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var block strings.Builder
	state := 0 // 0: before the sentence, 1: before the block, 2: in it, 3: after
	for sc := bufio.NewScanner(f); sc.Scan() && state < 3; {
		line := sc.Text()
		switch {
		case state == 0 && strings.HasPrefix(line, "Prometheus then shows"):
			state = 1
		case state == 1 && line == "```text":
			state = 2
		case state == 2 && line == "```":
			state = 3
		case state == 2:
			for from, to := range replace {
				line = strings.ReplaceAll(line, from, to)
			}
			block.WriteString(line + "\n")
		}
	}
	if state != 3 {
		t.Fatal("docs/observability.md has no ```text block after a line starting \"Prometheus then shows\"")
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	doc, err := p.TextToMetricFamilies(strings.NewReader(block.String()))
	if err != nil {
		t.Fatalf("Prometheus's parser refuses the doc's example: %v\n%s", err, block.String())
	}
	have := seriesOf(scraped)
	docSeries := seriesOf(doc)
	if len(docSeries) == 0 {
		t.Fatal("the doc's example shows no series")
	}
	if missing := difference(docSeries, have); len(missing) > 0 {
		t.Errorf("the doc's example shows %d series the scrape has not, such as:\n%s\nthe scrape has:\n%s", len(missing), strings.Join(missing[:min(3, len(missing))], "\n"), strings.Join(have, "\n"))
	}
	for name, mf := range doc {
		if s := scraped[name]; s == nil || s.GetType() != mf.GetType() {
			t.Errorf("the doc's %s is a %v; the scrape's %v", name, mf.GetType(), s.GetType())
		}
	}
}

// TestKeptDescribeProcessSeriesCarryTheVersion (issue 40 point 6): under
// Finder.KeepDescribed the process discovery starts to describe the
// plugin serves its first calls, and was started before its version was
// known. Scraped through promhttp and read by Prometheus's parser, every
// series of the scrape still carries the plugin's version: its start,
// start duration, exit and calls, the Describe call among them, are
// counted under it, and nothing is counted without it. Its exit event
// carries the version too.
func TestKeptDescribeProcessSeriesCarryTheVersion(t *testing.T) {
	t.Parallel()
	tel, url := promServer(t)
	var mu sync.Mutex
	var exits []host.Event
	tel.OnEvent = func(e host.Event) {
		if e.Type == host.EventExited || e.Type == host.EventCrashed {
			mu.Lock()
			exits = append(exits, e)
			mu.Unlock()
		}
	}
	dir := testutil.TempDir(t)
	writePlugin(t, dir, "fs", "fs 2")
	finder := &manager.Finder{Launch: host.Command{Cookie: cookie}, KeepDescribed: true, Host: host.Options{Telemetry: tel, Logger: slog.New(slog.DiscardHandler)}}
	m := newManager(t, manager.Config{Sources: []manager.Source{finder.Dirs(dir)}, Telemetry: tel, Logger: slog.New(slog.DiscardHandler), Restart: manager.RestartPolicy{Max: 20}})
	conn, _ := store(t, m, "fs")
	cl := objectstorev2.NewObjectStoreClient(conn)
	if _, err := cl.Exists(ctxT(t), &objectstorev2.ExistsRequest{Key: "k"}); err != nil {
		t.Fatal(err)
	}
	if finder.Launches() != 1 {
		t.Fatalf("%d launches before the crash; want 1, the kept one", finder.Launches())
	}
	crashAndRestart(t, cl) // the kept process exits; a new one starts
	mfs := scrape(t, url)
	var unversioned []string
	for _, s := range seriesOf(mfs) {
		if (strings.HasPrefix(s, "plugkit_") || strings.HasPrefix(s, "rpc_")) && !strings.Contains(s, "plugkit_plugin_version=1.0.0") && !strings.Contains(s, "_bucket{") {
			unversioned = append(unversioned, s)
		}
	}
	if len(unversioned) > 0 {
		t.Errorf("%d series (buckets not counted) without the plugin's version:\n%s", len(unversioned), strings.Join(unversioned, "\n"))
	}
	want := map[string]float64{"plugkit_plugin_starts_total": 2, "plugkit_plugin_exits_total": 1, "plugkit_plugin_start_duration_seconds": 2}
	for name, n := range want {
		if got := total(mfs[name]); got != n {
			t.Errorf("%s counts %v in all; want %v (the kept process and its restart)", name, got, n)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(exits) == 0 {
		t.Error("no exit event of the kept process")
	}
	for _, e := range exits {
		if !slices.Contains(e.Attributes, attribute.String("plugkit.plugin.version", "1.0.0")) {
			t.Errorf("the %v event of pid %d has no version: %v", e.Type, e.Pid, e.Attributes)
		}
	}
}

// total is the sum of a family's counters and histogram counts.
func total(mf *dto.MetricFamily) float64 {
	var n float64
	for _, m := range mf.GetMetric() {
		n += m.GetCounter().GetValue() + float64(m.GetHistogram().GetSampleCount())
	}
	return n
}

// TestUnversionedPluginIsCounted: a plugin whose Describe answer gives no
// release version is counted all the same, without the label (the
// launch to describe it still makes no series).
func TestUnversionedPluginIsCounted(t *testing.T) {
	t.Parallel()
	tel, url := promServer(t)
	dir := testutil.TempDir(t)
	writePlugin(t, dir, "fs", "fs 2 unversioned")
	finder := &manager.Finder{Launch: host.Command{Cookie: cookie}, Host: host.Options{Telemetry: tel, Logger: slog.New(slog.DiscardHandler)}}
	m := newManager(t, manager.Config{Sources: []manager.Source{finder.Dirs(dir)}, Telemetry: tel, Logger: slog.New(slog.DiscardHandler)})
	conn, info := store(t, m, "fs")
	if info.PluginVersion != "" {
		t.Fatalf("the plugin has version %q; want none", info.PluginVersion)
	}
	if _, err := objectstorev2.NewObjectStoreClient(conn).Exists(ctxT(t), &objectstorev2.ExistsRequest{Key: "k"}); err != nil {
		t.Fatal(err)
	}
	mfs := scrape(t, url)
	if got := total(mfs["plugkit_plugin_starts_total"]); got != 1 {
		t.Errorf("plugkit_plugin_starts_total counts %v; want 1 (the plugin's start for use)", got)
	}
	var calls float64
	for _, m := range mfs["rpc_client_call_duration_seconds"].GetMetric() {
		if strings.Contains(labelsOf(m), "rpc_method=objectstore.v2.ObjectStore/Exists") {
			calls += float64(m.GetHistogram().GetSampleCount())
		}
	}
	if calls != 1 {
		t.Errorf("rpc_client_call_duration_seconds counts %v Exists calls; want 1", calls)
	}
}
