package main

import (
	"math"
	"slices"
)

// median of xs; 0 for none. Medians, not means: on a shared machine one
// slow run says more about the neighbours than about the code.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// worst is the largest of xs; 0 for none.
func worst(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	return slices.Max(xs)
}

// pairedRatio is the median of a[i]/b[i]: each ratio compares two
// measurements taken back to back, in the same run, so a noisy neighbour
// slows both sides of it. Pairs with b[i] ≤ 0 are skipped.
func pairedRatio(a, b []float64) float64 {
	var rs []float64
	for i := range min(len(a), len(b)) {
		if b[i] > 0 {
			rs = append(rs, a[i]/b[i])
		}
	}
	return median(rs)
}

// Line is y = Fixed + Slope·x fitted by least squares, with R² saying how
// well a straight line explains the points.
type Line struct {
	Fixed float64 `json:"fixed"`
	Slope float64 `json:"slope"`
	R2    float64 `json:"r2"`
}

// fitLine fits a line through (xs[i], ys[i]). It needs two distinct xs;
// otherwise ok is false.
func fitLine(xs, ys []float64) (l Line, ok bool) {
	n := float64(len(xs))
	if len(xs) != len(ys) || len(xs) < 2 {
		return l, false
	}
	var sx, sy, sxx, sxy float64
	for i := range xs {
		sx += xs[i]
		sy += ys[i]
		sxx += xs[i] * xs[i]
		sxy += xs[i] * ys[i]
	}
	den := n*sxx - sx*sx
	if den == 0 {
		return l, false
	}
	l.Slope = (n*sxy - sx*sy) / den
	l.Fixed = (sy - l.Slope*sx) / n
	mean := sy / n
	var ssRes, ssTot float64
	for i := range xs {
		d := ys[i] - (l.Fixed + l.Slope*xs[i])
		ssRes += d * d
		ssTot += (ys[i] - mean) * (ys[i] - mean)
	}
	l.R2 = 1
	if ssTot > 0 {
		l.R2 = 1 - ssRes/ssTot
	}
	if math.IsNaN(l.R2) {
		l.R2 = 0
	}
	return l, true
}
