package rules

import (
	"sync"

	"github.com/kvblob/kvblob/runtime/driver"
)

// Admission checks, composed by the Admit function generated from each
// store's spec. Each returns a RejectedError naming its rule, so a refusal
// says which rule of the spec it enforces. They run before anything is
// recorded.

// AdmitRows refuses an empty batch and more rows than max (0: no bound).
func AdmitRows(rows []driver.Row, max int) error {
	if len(rows) == 0 {
		return driver.Reject(driver.RuleNoRows, "no rows; submit at least one")
	}
	if max > 0 && len(rows) > max {
		return driver.Reject(driver.RuleTooManyRows, "%d rows exceed the driver's %d rows per operation", len(rows), max)
	}
	return nil
}

// keySets recycles AdmitKeys' sets: admission runs for every driver call,
// and a fresh map per call was most of its cost.
var keySets = sync.Pool{New: func() any { return map[string]int{} }}

// AdmitKeys refuses an empty key and a key repeated within the batch.
func AdmitKeys(rows []driver.Row) error {
	seen := keySets.Get().(map[string]int)
	defer func() { clear(seen); keySets.Put(seen) }()
	for i, r := range rows {
		if r.Key == "" {
			return driver.Reject(driver.RuleEmptyKey, "row %d has an empty key", i)
		}
		if j, ok := seen[r.Key]; ok {
			return driver.Reject(driver.RuleRepeatedKey, "rows %d and %d repeat key %q", j, i, r.Key)
		}
		seen[r.Key] = i
	}
	return nil
}

// AdmitSpans refuses a row with no span, more than one span unless
// multiSpan, an invalid span, a span outside every live registration and a
// row of maxRowBytes or more (0: no bound).
func AdmitSpans(rows []driver.Row, multiSpan bool, maxRowBytes int64, live func(*driver.Region) bool) error {
	for i, r := range rows {
		if len(r.Spans) == 0 {
			return driver.Reject(driver.RuleInvalidSpan, "row %d (%q) has no span", i, r.Key)
		}
		if len(r.Spans) > 1 && !multiSpan {
			return driver.Reject(driver.RuleMultiSpan, "row %d (%q) has %d spans; this store takes one span per row", i, r.Key, len(r.Spans))
		}
		for j, s := range r.Spans {
			if err := s.Validate(); err != nil {
				return driver.Reject(driver.RuleInvalidSpan, "row %d (%q) span %d: %v", i, r.Key, j, err)
			}
			if live != nil && !live(s.Region) {
				return driver.Reject(driver.RuleSpanOutside, "row %d (%q) span %d lies in region %q, which has no live registration", i, r.Key, j, s.Region.Name)
			}
		}
		if maxRowBytes > 0 && r.Bytes() >= maxRowBytes {
			return driver.Reject(driver.RuleRowTooLarge, "row %d (%q) has %d bytes; this store takes rows under %d", i, r.Key, r.Bytes(), maxRowBytes)
		}
	}
	return nil
}

// AdmitHint refuses a non-zero hint unless the driver reads hints.
func AdmitHint(h driver.Hint, hints bool) error {
	if !h.IsZero() && !hints {
		return driver.Reject(driver.RuleHint, "a hint was given, but this driver does not declare hints")
	}
	return nil
}

// AdmitRegion refuses an invalid region and a device region unless the
// driver declares device memory.
func AdmitRegion(r *driver.Region, deviceMemory bool) error {
	if err := r.Validate(); err != nil {
		return driver.Reject(driver.RuleInvalidSpan, "%v", err)
	}
	if r.Kind == driver.Device && !deviceMemory {
		return driver.Reject(driver.RuleDeviceRegion, "region %q is device memory; this driver takes host memory only", r.Name)
	}
	return nil
}
