// Package generated holds the Go that drivergen emits from spec/: per spec
// file (package: fs), the package its driver imports (fsspec) and, inside
// it, the package of its conformance cases (fsspec/fscases), which only
// tests and kits import, so a driver does not compile the cases in.
// Nothing here is edited by hand: change the spec and run 'make generate'.
// TestUpToDate fails when a file drifts or a generated file is left over.
package generated

//go:generate go run ../cmd/drivergen generate -spec ../spec -out .
