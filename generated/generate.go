// Package generated holds the Go that drivergen emits from spec/, one
// package per spec file. Nothing here is edited by hand: change the spec and
// run 'make generate'. TestUpToDate fails when a file drifts.
package generated

//go:generate go run ../cmd/drivergen generate -spec ../spec -out .
