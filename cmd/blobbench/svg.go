package main

import (
	"bytes"
	"fmt"
	"math"
)

// chart draws bandwidth (GB/s) by row size at 2 workers (or the largest
// worker count measured below it): one line per store and direction, and
// memcpy, as a self-contained SVG.
func chart(rep *report) []byte {
	const w, h, left, right, top, bottom = 720, 420, 70, 170, 40, 50
	type series struct {
		name  string
		color string
		pts   map[int64]float64
	}
	workers := 0
	for _, b := range rep.Bandwidth {
		if b.Workers <= 2 && b.Workers > workers {
			workers = b.Workers
		}
	}
	var sizes []int64
	seen := map[int64]bool{}
	ser := []*series{
		{"memory publish", "#1f77b4", map[int64]float64{}}, {"memory fetch", "#aec7e8", map[int64]float64{}},
		{"mooncake-fake publish", "#d62728", map[int64]float64{}}, {"mooncake-fake fetch", "#ff9896", map[int64]float64{}},
		{"redis publish", "#9467bd", map[int64]float64{}}, {"redis fetch", "#c5b0d5", map[int64]float64{}},
		{"memcpy", "#2ca02c", map[int64]float64{}},
	}
	ymax := 0.0
	for _, b := range rep.Bandwidth {
		if b.Workers != workers {
			continue
		}
		if !seen[b.RowBytes] {
			seen[b.RowBytes] = true
			sizes = append(sizes, b.RowBytes)
		}
		var i int
		switch b.Store {
		case "memory":
			i = 0
		case "mooncake-fake":
			i = 2
		case "redis":
			i = 4
		default:
			continue // the chart draws these three beside memcpy; the tables hold every store
		}
		ser[i].pts[b.RowBytes], ser[i+1].pts[b.RowBytes] = b.PublishGBs, b.FetchGBs
		if b.MemcpyGBs > ser[6].pts[b.RowBytes] {
			ser[6].pts[b.RowBytes] = b.MemcpyGBs
		}
		ymax = math.Max(ymax, math.Max(b.MemcpyGBs, math.Max(b.PublishGBs, b.FetchGBs)))
	}
	ymax = math.Max(ymax*1.1, 0.1)
	var buf bytes.Buffer
	fmt.Fprintf(&buf, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", w, h)
	fmt.Fprintf(&buf, `<rect width="%d" height="%d" fill="white"/>`+"\n", w, h)
	fmt.Fprintf(&buf, `<text x="%d" y="24" font-size="15">kvblob bandwidth by row size (%d workers), GB/s</text>`+"\n", left, workers)
	pw, ph := float64(w-left-right), float64(h-top-bottom)
	x := func(i int) float64 {
		if len(sizes) == 1 {
			return float64(left) + pw/2
		}
		return float64(left) + pw*float64(i)/float64(len(sizes)-1)
	}
	y := func(v float64) float64 { return float64(top) + ph*(1-v/ymax) }
	fmt.Fprintf(&buf, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", left, h-bottom, w-right, h-bottom)
	fmt.Fprintf(&buf, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", left, top, left, h-bottom)
	for k := 0; k <= 4; k++ {
		v := ymax * float64(k) / 4
		fmt.Fprintf(&buf, `<text x="%d" y="%.1f" text-anchor="end">%.1f</text>`+"\n", left-6, y(v)+4, v)
		fmt.Fprintf(&buf, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>`+"\n", left, y(v), w-right, y(v))
	}
	for i, s := range sizes {
		fmt.Fprintf(&buf, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", x(i), h-bottom+18, size(s))
	}
	fmt.Fprintf(&buf, `<text x="%.1f" y="%d" text-anchor="middle">row size</text>`+"\n", float64(left)+pw/2, h-12)
	for k, s := range ser {
		var path bytes.Buffer
		for i, sz := range sizes {
			v, ok := s.pts[sz]
			if !ok {
				continue
			}
			cmd := "L"
			if path.Len() == 0 {
				cmd = "M"
			}
			fmt.Fprintf(&path, "%s%.1f %.1f ", cmd, x(i), y(v))
			fmt.Fprintf(&buf, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`+"\n", x(i), y(v), s.color)
		}
		fmt.Fprintf(&buf, `<path d="%s" fill="none" stroke="%s" stroke-width="2"/>`+"\n", path.String(), s.color)
		ly := top + 10 + 20*k
		fmt.Fprintf(&buf, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"/>`+"\n", w-right+15, ly, w-right+35, ly, s.color)
		fmt.Fprintf(&buf, `<text x="%d" y="%d">%s</text>`+"\n", w-right+40, ly+4, s.name)
	}
	buf.WriteString("</svg>\n")
	return buf.Bytes()
}
