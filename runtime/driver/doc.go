// Package driver is the contract between kvblob's backend and a store.
//
// A store driver moves KV-cache rows between memory the caller lent it and a
// byte store. The contract keeps two facts apart for every operation, and
// neither implies the other:
//
//   - each row's result (Operation.Poll): READY, MISS, NOT_READY, DECLINED,
//     FAULT or CANCELLED;
//   - whether the store may still touch the caller's memory
//     (Operation.AccessEnded), and whether it lost the evidence for good
//     (Operation.AccessUnprovable).
//
// A caller may reuse a slot only after the operation that used it proved its
// access ended. A row can be READY while a transfer still runs, and an
// operation can end its access long before its results are known.
//
// Errors. RejectedError (DriverRejected) is the only error a driver's Put,
// Get, Register or Unregister may return, and the only one that certifies
// nothing escaped: no row was recorded and no memory was touched. It is not a
// store error. Once an operation is recorded, every later failure is a row
// result (FAULT), never an error.
//
// Capabilities. A driver declares what it supports in Capabilities. Every
// capability's zero value is "unsupported", so a capability added later never
// grants anything to a driver written before it.
//
// Memory. A Region is memory a lender owns, laid out as slots. Host regions a
// C SDK keeps must live off the Go heap (see runtime/hostmem), since cgo
// forbids C from holding Go pointers. A Span is (region, offset, length); a
// Row is a key and its spans.
//
// Keys. Every key is prefix/v1/hex(name): see Key and KeyStem.
package driver
