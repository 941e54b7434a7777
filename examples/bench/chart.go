package main

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
)

// A chart is the side-by-side of one run of the parallel scenarios (-svg):
// per lock, acquisitions/s and redis-server CPU per acquisition, each a bar
// at the median of the rounds with a whisker from the lowest round to the
// highest. Hand-written SVG: one file, no dependency, readable in a browser
// and on GitHub.

// chartSeries is one lock's line of a parallel scenario, round by round.
type chartSeries struct {
	label string    // the lock, and the scenario when the run had several
	rates []float64 // acquisitions/s of each round
	cpu   []float64 // redis-server CPU per acquisition of each round, µs
}

// Per-round breakdown keys of a parallel result (addRound).
const (
	ratesPerRound = "acquisitions_per_sec_per_round"
	cpuPerRound   = "redis_cpu_us_per_acq_per_round"
)

// errNothingToChart is returned when a run has no line with rounds.
var errNothingToChart = errors.New("-svg: the run has no parallel scenario's line to chart")

// chartSeriesOf picks the lines of rs that have rounds (the parallel
// scenarios' locks), in the report's order.
func chartSeriesOf(rs []*result) []chartSeries {
	scenarios := map[string]bool{}
	for _, r := range rs {
		if r.Breakdown[ratesPerRound] != nil {
			scenarios[r.Scenario] = true
		}
	}
	var out []chartSeries
	for _, r := range rs {
		if r.Breakdown[ratesPerRound] == nil {
			continue
		}
		label := r.Lock
		if len(scenarios) > 1 {
			label = r.Scenario + " " + r.Lock
		}
		out = append(out, chartSeries{label: label, rates: byRound(r.Breakdown[ratesPerRound]), cpu: byRound(r.Breakdown[cpuPerRound])})
	}
	return out
}

// byRound orders a per-round breakdown ("1", "2", …) by round.
func byRound(m map[string]float64) []float64 {
	keys := make([]int, 0, len(m))
	for k := range m {
		if n, err := strconv.Atoi(k); err == nil {
			keys = append(keys, n)
		}
	}
	slices.Sort(keys)
	out := make([]float64, len(keys))
	for i, k := range keys {
		out[i] = m[strconv.Itoa(k)]
	}
	return out
}

// writeChartFile writes rep's chart to path.
func writeChartFile(path string, rep report) error {
	var b bytes.Buffer
	if err := writeChart(&b, rep.Machine, chartSeriesOf(rep.Results)); err != nil {
		return err
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// Layout, in pixels.
const (
	chartWidth  = 760
	labelWidth  = 190 // the lock's name, left of the bars
	valueWidth  = 70  // the median's figure, right of the bars
	rowHeight   = 22
	barHeight   = 14
	panelHeader = 34
	panelGap    = 18
	chartTop    = 52
)

// chartPanel is one of the chart's two measures.
type chartPanel struct {
	title  string
	values func(chartSeries) []float64
	format func(float64) string
}

var chartPanels = []chartPanel{
	{"acquisitions per second (more is better)", func(s chartSeries) []float64 { return s.rates }, fmtRate},
	{"redis-server CPU per acquisition, µs (less is better)", func(s chartSeries) []float64 { return s.cpu }, func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }},
}

// writeChart writes the SVG of series, measured on m, to w: a title naming
// the ground and the machine, then a panel per measure, a row per lock.
func writeChart(w io.Writer, m machine, series []chartSeries) error {
	if len(series) == 0 {
		return errNothingToChart
	}
	panelH := panelHeader + rowHeight*len(series)
	height := chartTop + len(chartPanels)*(panelH+panelGap)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n",
		chartWidth, height, chartWidth, height)
	title := "parallel: " + m.Ground
	fmt.Fprintf(&b, "<title>%s</title>\n", esc(title))
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", chartWidth, height)
	fmt.Fprintf(&b, `<text x="10" y="20" font-size="14" font-weight="bold">%s</text>`+"\n", esc(title))
	fmt.Fprintf(&b, `<text x="10" y="38" fill="#555555">%s</text>`+"\n", esc(chartSubtitle(m, series)))
	for i, p := range chartPanels {
		writePanel(&b, p, series, chartTop+i*(panelH+panelGap))
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// chartSubtitle names the machine, the rounds and what a bar is.
func chartSubtitle(m machine, series []chartSeries) string {
	load := m.LoadAtStart
	if m.LoadAtFinish != "" {
		load += " → " + m.LoadAtFinish
	}
	return fmt.Sprintf("%s, %d CPUs, %s, redis %s, load average %s; bar: median of %d rounds, whisker: lowest to highest round",
		m.CPU, m.NumCPU, m.Go, m.Redis, load, len(series[0].rates))
}

// writePanel writes one measure's panel at y: its title, a grid of four
// steps, and per lock a bar (class "bar") with its whisker and figure.
func writePanel(b *strings.Builder, p chartPanel, series []chartSeries, y int) {
	top := 0.0
	for _, s := range series {
		if vs := p.values(s); len(vs) > 0 {
			top = max(top, slices.Max(vs))
		}
	}
	top = niceCeil(top)
	x0, plotW := float64(labelWidth), float64(chartWidth-labelWidth-valueWidth)
	x := func(v float64) float64 { return x0 + plotW*v/top }
	fmt.Fprintf(b, `<g class="panel"><text x="10" y="%d" font-weight="bold">%s</text>`+"\n", y+14, esc(p.title))
	gridTop, gridBottom := y+panelHeader-12, y+panelHeader+rowHeight*len(series)
	for i := 0; i <= 4; i++ {
		v := top * float64(i) / 4
		fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#dddddd"/><text x="%.1f" y="%d" font-size="10" fill="#777777" text-anchor="middle">%s</text>`+"\n",
			x(v), gridTop, x(v), gridBottom, x(v), gridTop-2, esc(p.format(v)))
	}
	for i, s := range series {
		vs := p.values(s)
		rowY := y + panelHeader + i*rowHeight
		mid := float64(rowY) + barHeight/2
		med, lo, hi := median(vs), 0.0, 0.0
		if len(vs) > 0 {
			lo, hi = slices.Min(vs), slices.Max(vs)
		}
		fmt.Fprintf(b, `<text x="%d" y="%.1f" text-anchor="end" dominant-baseline="middle">%s</text>`+"\n", labelWidth-8, mid, esc(s.label))
		fmt.Fprintf(b, `<rect class="bar" x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"><title>%s: median %s, rounds %s</title></rect>`+"\n",
			x0, rowY, x(med)-x0, barHeight, barColor(s.label), esc(s.label), esc(p.format(med)), esc(fmtRounds(vs, p.format)))
		fmt.Fprintf(b, `<path class="whisker" d="M%.1f %.1fH%.1fM%.1f %.1fV%.1fM%.1f %.1fV%.1f" stroke="#222222" fill="none"/>`+"\n",
			x(lo), mid, x(hi), x(lo), mid-4, mid+4, x(hi), mid-4, mid+4)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" dominant-baseline="middle">%s</text>`+"\n", x(hi)+6, mid, esc(p.format(med)))
	}
	b.WriteString("</g>\n")
}

// barColor: rlock's bars stand out, the floors are grey, the peers blue.
func barColor(label string) string {
	lock := label[strings.LastIndexByte(label, ' ')+1:]
	switch {
	case strings.HasPrefix(lock, "rlock"):
		return "#d9480f"
	case lock == "setnx" || lock == autopipelineKind:
		return "#adb5bd"
	}
	return "#4c6ef5"
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

// fmtRate prints a rate per second: "850", "12.1k".
func fmtRate(v float64) string {
	if v >= 1000 {
		return strconv.FormatFloat(v/1e3, 'f', 1, 64) + "k"
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}

func fmtRounds(vs []float64, f func(float64) string) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = f(v)
	}
	return strings.Join(s, " ")
}

// esc escapes text for XML character data and attribute values.
func esc(s string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(s)) // a strings.Builder never fails
	return b.String()
}
