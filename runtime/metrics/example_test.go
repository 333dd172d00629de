package metrics_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	"github.com/rs/zerolog"

	"github.com/kvblob/kvblob/runtime/backend"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/hostmem"
	"github.com/kvblob/kvblob/runtime/metrics"
	"github.com/kvblob/kvblob/stores/memory"
)

// Example registers kvblob's collectors on a registry of the embedder's
// own, not prometheus's global one, and serves it: the drivers' calls
// (NewDrivers, instrumenting the driver the backend is bound to) and the
// backend's Stats (NewBackendCollector). docs/operating.md shows the same
// wiring.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	logger := zerolog.New(os.Stderr).Level(zerolog.WarnLevel)
	drivers := metrics.NewDrivers(metrics.Options{Logger: logger})
	drv := memory.New(memory.Options{})
	d := drivers.Instrument(drv, "memory") // bind and use d, not drv

	lender, err := hostmem.NewLender("kv", driver.Layout{SlotBytes: 4 << 10, Slots: 4})
	if err != nil {
		log.Fatal(err)
	}
	hold, err := lender.Hold()
	if err != nil {
		log.Fatal(err)
	}
	bind, err := backend.Bind(ctx, hold.Regions(), d, hold)
	if err != nil {
		log.Fatal(err)
	}
	be, err := backend.New(bind, backend.Config{Logger: logger.With().Str(metrics.FieldStore, "memory").Logger()})
	if err != nil {
		log.Fatal(err)
	}

	// The embedder's own registry: register each collector once.
	reg := prometheus.NewRegistry()
	reg.MustRegister(drivers, metrics.NewBackendCollector("memory", be))
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))

	// Scrape it, as Prometheus would, and lint what it serves.
	srv := httptest.NewServer(mux)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		log.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		log.Fatal(err)
	}
	problems, err := promlint.New(bytes.NewReader(body)).Lint()
	if err != nil {
		log.Fatal(err)
	}
	families, err := reg.Gather()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("families:", len(families), "lint problems:", len(problems))

	if err := be.Shutdown(ctx); err != nil {
		log.Fatal(err) // keep the lender's memory
	}
	if err := drv.Close(); err != nil {
		log.Fatal(err)
	}
	if err := lender.Close(); err != nil {
		log.Fatal(err)
	}
	// Output:
	// families: 18 lint problems: 0
}
