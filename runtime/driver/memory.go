package driver

import (
	"fmt"
	"math"
)

// MemoryKind says where a region's bytes live.
type MemoryKind uint8

const (
	// Host is CPU memory the process can read and write.
	Host MemoryKind = iota + 1
	// Device is accelerator memory. Only a driver that declares
	// Capabilities.DeviceMemory may register it.
	Device
)

func (k MemoryKind) String() string {
	switch k {
	case Host:
		return "HOST"
	case Device:
		return "DEVICE"
	}
	return fmt.Sprintf("MemoryKind(%d)", uint8(k))
}

// Validate reports whether k is a known memory kind.
func (k MemoryKind) Validate() error {
	if k != Host && k != Device {
		return fmt.Errorf("driver: memory kind %d is unknown; want HOST or DEVICE", uint8(k))
	}
	return nil
}

// Layout is how a region is cut into slots: Slots slots of SlotBytes bytes
// each, slot i starting at i*SlotBytes.
type Layout struct {
	SlotBytes int64
	Slots     int
}

// Bytes is the size of all slots together.
func (l Layout) Bytes() int64 { return l.SlotBytes * int64(l.Slots) }

// Validate refuses a layout with no slot, an empty slot, or a size that does
// not fit in an int.
func (l Layout) Validate() error {
	if l.SlotBytes <= 0 {
		return fmt.Errorf("driver: layout slot size %d must be positive", l.SlotBytes)
	}
	if l.Slots <= 0 {
		return fmt.Errorf("driver: layout slot count %d must be positive", l.Slots)
	}
	if l.SlotBytes > math.MaxInt/int64(l.Slots) {
		return fmt.Errorf("driver: layout of %d slots of %d bytes overflows", l.Slots, l.SlotBytes)
	}
	return nil
}

// Region is memory a lender owns and lends to a store, laid out as slots.
//
// For a Host region, Mem holds the bytes (len(Mem) >= Layout.Bytes()); a
// region a C SDK will keep must be allocated off the Go heap. A Device region
// has no Mem: its bytes are reachable only through Addr by a driver that
// declares device memory.
type Region struct {
	Name   string
	Kind   MemoryKind
	Layout Layout
	Mem    []byte  // host bytes; nil for a device region
	Addr   uintptr // base address, for drivers that hand addresses to an SDK
}

// Validate checks the region's kind, layout and backing memory.
func (r *Region) Validate() error {
	if r == nil {
		return fmt.Errorf("driver: region is nil")
	}
	if err := r.Kind.Validate(); err != nil {
		return fmt.Errorf("region %q: %w", r.Name, err)
	}
	if err := r.Layout.Validate(); err != nil {
		return fmt.Errorf("region %q: %w", r.Name, err)
	}
	if r.Kind == Host && int64(len(r.Mem)) < r.Layout.Bytes() {
		return fmt.Errorf("driver: region %q has %d bytes of host memory; its layout needs %d",
			r.Name, len(r.Mem), r.Layout.Bytes())
	}
	return nil
}

// Slot returns the span covering slot i whole.
func (r *Region) Slot(i int) Span {
	return Span{Region: r, Offset: int64(i) * r.Layout.SlotBytes, Length: r.Layout.SlotBytes}
}

// Span is a window of a region: Length bytes from Offset.
type Span struct {
	Region *Region
	Offset int64
	Length int64
}

// Validate refuses a span with no region, a negative offset, an empty or
// negative length, or an end past the region's slots.
func (s Span) Validate() error {
	if s.Region == nil {
		return fmt.Errorf("driver: span has no region")
	}
	if s.Offset < 0 {
		return fmt.Errorf("driver: span offset %d is negative", s.Offset)
	}
	if s.Length <= 0 {
		return fmt.Errorf("driver: span length %d must be positive", s.Length)
	}
	if s.Offset > s.Region.Layout.Bytes()-s.Length {
		return fmt.Errorf("driver: span [%d, +%d) ends past region %q (%d bytes)",
			s.Offset, s.Length, s.Region.Name, s.Region.Layout.Bytes())
	}
	return nil
}

// Bytes returns the span's host bytes. It panics for a device region.
func (s Span) Bytes() []byte {
	if s.Region.Kind != Host {
		panic("driver: Span.Bytes on a " + s.Region.Kind.String() + " region")
	}
	return s.Region.Mem[s.Offset : s.Offset+s.Length : s.Offset+s.Length]
}

// Row is one KV row: the key it is stored under and the spans holding (for a
// put) or receiving (for a get) its payload, concatenated in order.
type Row struct {
	Key   string
	Spans []Span
}

// Bytes is the row's payload length, the sum of its span lengths.
func (r Row) Bytes() int64 {
	var n int64
	for _, s := range r.Spans {
		n += s.Length
	}
	return n
}

// Validate refuses an empty key, a row with no span and any invalid span.
func (r Row) Validate() error {
	if r.Key == "" {
		return fmt.Errorf("driver: row key is empty")
	}
	if len(r.Spans) == 0 {
		return fmt.Errorf("driver: row %q has no span", r.Key)
	}
	for i, s := range r.Spans {
		if err := s.Validate(); err != nil {
			return fmt.Errorf("row %q span %d: %w", r.Key, i, err)
		}
	}
	return nil
}
