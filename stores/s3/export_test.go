package s3

import "io"

// OnBody makes d hand each PUT body it makes to f (for tests).
func OnBody(d *Driver, f func(io.Reader)) { d.onBody = f }

// RangeTotal is rangeTotal (for tests).
var RangeTotal = rangeTotal
