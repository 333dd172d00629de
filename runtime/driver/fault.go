package driver

import "fmt"

// FaultError is a FAULT row result as an error: the store's numeric code
// and the text saying what went wrong. A driver reports a FAULT as a row
// result, never as an error; FaultError is how a caller that deals in
// errors carries one on: the backend's Outcome.Err wraps the FaultError of
// the row that stopped or failed an attempt, so that
//
//	var f *driver.FaultError
//	if errors.As(o.Err, &f) { ... f.Code ... }
//
// finds the store's code (its name is in the store's spec).
type FaultError struct {
	Code int64
	Text string
}

func (e *FaultError) Error() string { return fmt.Sprintf("FAULT(%d): %s", e.Code, e.Text) }

// Err returns a *FaultError for a FAULT, and nil for every other status
// (a MISS, a NOT_READY or a DECLINED is an answer, not an error).
func (r Result) Err() error {
	if r.Status != Fault {
		return nil
	}
	return &FaultError{Code: r.Code, Text: r.Text}
}
