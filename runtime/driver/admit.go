package driver

import "sync"

// Admission checks, composed by the Admit function generated from each
// store's spec. Each returns a RejectedError naming its rule, so a refusal
// says which rule of the spec it enforces. They run before anything is
// recorded.

// Admission rule names, as spec files spell them.
const (
	RuleNoRows              = "no_rows"
	RuleEmptyKey            = "empty_key"
	RuleRepeatedKey         = "repeated_key"
	RuleMultiSpan           = "multi_span"
	RuleRowTooLarge         = "row_too_large"
	RuleSpanOutside         = "span_outside_registration"
	RuleHint                = "hint"
	RuleDeviceRegion        = "device_region"
	RuleTooManyRows         = "too_many_rows"
	RuleInvalidSpan         = "invalid_span"
	RuleClosed              = "closed"
	RuleAccessOpen          = "access_open"
	RuleUnknownRegistration = "unknown_registration"
)

// AdmitRows refuses an empty batch and more rows than max (0: no bound).
func AdmitRows(rows []Row, max int) error {
	if len(rows) == 0 {
		return Reject(RuleNoRows, "no rows; submit at least one")
	}
	if max > 0 && len(rows) > max {
		return Reject(RuleTooManyRows, "%d rows exceed the driver's %d rows per operation", len(rows), max)
	}
	return nil
}

// keySets recycles AdmitKeys' sets: admission runs for every driver call,
// and a fresh map per call was most of its cost.
var keySets = sync.Pool{New: func() any { return map[string]int{} }}

// AdmitKeys refuses an empty key and a key repeated within the batch.
func AdmitKeys(rows []Row) error {
	seen := keySets.Get().(map[string]int)
	defer func() { clear(seen); keySets.Put(seen) }()
	for i, r := range rows {
		if r.Key == "" {
			return Reject(RuleEmptyKey, "row %d has an empty key", i)
		}
		if j, ok := seen[r.Key]; ok {
			return Reject(RuleRepeatedKey, "rows %d and %d repeat key %q", j, i, r.Key)
		}
		seen[r.Key] = i
	}
	return nil
}

// AdmitSpans refuses a row with no span, more than one span unless
// multiSpan, an invalid span, a span outside every live registration and a
// row of maxRowBytes or more (0: no bound).
func AdmitSpans(rows []Row, multiSpan bool, maxRowBytes int64, live func(*Region) bool) error {
	for i, r := range rows {
		if len(r.Spans) == 0 {
			return Reject(RuleInvalidSpan, "row %d (%q) has no span", i, r.Key)
		}
		if len(r.Spans) > 1 && !multiSpan {
			return Reject(RuleMultiSpan, "row %d (%q) has %d spans; this store takes one span per row", i, r.Key, len(r.Spans))
		}
		for j, s := range r.Spans {
			if err := s.Validate(); err != nil {
				return Reject(RuleInvalidSpan, "row %d (%q) span %d: %v", i, r.Key, j, err)
			}
			if live != nil && !live(s.Region) {
				return Reject(RuleSpanOutside, "row %d (%q) span %d lies in region %q, which has no live registration", i, r.Key, j, s.Region.Name)
			}
		}
		if maxRowBytes > 0 && r.Bytes() >= maxRowBytes {
			return Reject(RuleRowTooLarge, "row %d (%q) has %d bytes; this store takes rows under %d", i, r.Key, r.Bytes(), maxRowBytes)
		}
	}
	return nil
}

// AdmitHint refuses a non-zero hint unless the driver reads hints.
func AdmitHint(h Hint, hints bool) error {
	if !h.IsZero() && !hints {
		return Reject(RuleHint, "a hint was given, but this driver does not declare hints")
	}
	return nil
}

// AdmitRegion refuses an invalid region and a device region unless the
// driver declares device memory.
func AdmitRegion(r *Region, deviceMemory bool) error {
	if err := r.Validate(); err != nil {
		return Reject(RuleInvalidSpan, "%v", err)
	}
	if r.Kind == Device && !deviceMemory {
		return Reject(RuleDeviceRegion, "region %q is device memory; this driver takes host memory only", r.Name)
	}
	return nil
}
