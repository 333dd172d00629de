// Package metrics exports what a serving runtime's operators watch, in
// Prometheus's format (github.com/prometheus/client_golang), and logs the
// drivers' events through zerolog.
//
// Two collectors, each registered once with the runtime's registry:
//
//   - NewBackendCollector reads a backend's Stats at each scrape: attempts,
//     batches queued, started, settled and unprovable, calls open, the
//     oldest call's age, and whether the driver broke its protocol.
//   - Drivers counts what moves through drivers wrapped by its Instrument:
//     rows and bytes by store, operation and result, call latency
//     histograms, calls in flight, operations whose access is still open,
//     unprovable operations and the spans and bytes they pin.
//
// Label sets are bounded: store (a name the caller gives once per driver),
// op ("put" or "get") and result (a row status in lower case, or
// "rejected" and "error" for calls that recorded no operation). No label
// ever holds a key, a row name or an error's text. docs/operating.md lists
// every family, label, log event and field.
//
// # Concurrency
//
// Every method of Drivers, BackendCollector and the drivers and operations
// Instrument returns is safe for concurrent use by multiple goroutines, as
// the driver contract requires.
package metrics
