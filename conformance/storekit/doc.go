// Package storekit is what a store's test kit and tests are built from,
// so that no kit copies another's: a real server, found where Debian or go
// install put it or where the kit says (FindBinaryIn), its folder prepared
// once (Spec.Init), run as the user it needs (Spec.User), started on a
// free loopback port with proof it listens on loopback only, frozen,
// thawed, killed and restarted, asked to stop before it is killed, and
// dying with the test process however that ends (Spec, Start, Server); a
// full filesystem (Mount, FillFS); test certificates (NewCerts); a row key
// for the integrity check (RowKey); the spec position of a generated case
// (SpecPos); the kit's driver behind whatever wraps it (Unwrap); a fixture
// for a driver whose calls finish before Put and Get return, with its
// rows-in-flight checks (Fx); and a TestMain that sets up, runs the tests
// and fails on a goroutine they leaked (Main).
//
// A store's conformance test then calls conformance.Run once per server
// build; docs/writing-a-store.md walks through a kit.
package storekit
