// Package twosdks holds one store ("mooncake") run by two packages, as the
// Mooncake store is: fakesdk in every build (the memory store, standing
// for the fake SDK) and realsdk only with -tags mooncake (the memory store
// again, with a check it does not run, standing for the real SDK). The
// gate's test runs both with go test -json and checks that each row is one
// package's suite: with --sdk real, the real package's alone.
package twosdks
