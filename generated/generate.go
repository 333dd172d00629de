// Package generated holds the Go that drivergen emits from spec/: per store
// (a spec's store: redis), one package its driver imports (redis: a value
// per spec file, Redis7 and RedisValkey81, each with the typed table of
// its calls) and, inside it, the package of every spec's conformance cases
// (redis/rediscases), which only tests and kits import, so a driver does
// not compile the cases in.
// Nothing here is edited by hand: change the spec and run 'make generate'.
// TestUpToDate fails when a file drifts or a generated file is left over.
package generated

//go:generate go run ../cmd/drivergen generate -spec ../spec -out .
