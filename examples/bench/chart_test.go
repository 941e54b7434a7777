package main

import (
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/go-rlock/rlock/internal/redistest"
)

// parallelLine is a parallel scenario's line of lock with the given rounds.
func parallelLine(lock string, rates, cpu []float64) *result {
	r := newResult(parallelScenario, lock)
	for i := range rates {
		r.addRound(i, &parRound{})
		r.Breakdown[ratesPerRound][strconv.Itoa(i+1)] = rates[i]
		r.Breakdown[cpuPerRound][strconv.Itoa(i+1)] = cpu[i]
	}
	return r
}

// svgElement is what the test reads of each element of the chart.
type svgElement struct {
	name, class string
	panel       int // the panel it is in, from 1; 0 outside
}

// readSVG decodes an SVG with encoding/xml, failing on XML that is not
// well formed, and returns its elements in order.
func readSVG(t *testing.T, r io.Reader) []svgElement {
	t.Helper()
	d := xml.NewDecoder(r)
	var out []svgElement
	panel, inPanel := 0, false
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v", err)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			var class string
			for _, a := range el.Attr {
				if a.Name.Local == "class" {
					class = a.Value
				}
			}
			if el.Name.Local == "g" && class == "panel" {
				panel, inPanel = panel+1, true
			}
			p := 0
			if inPanel {
				p = panel
			}
			out = append(out, svgElement{name: el.Name.Local, class: class, panel: p})
		case xml.EndElement:
			if el.Name.Local == "g" {
				inPanel = false
			}
		}
	}
	return out
}

// The chart is well-formed SVG with two panels (acquisitions/s, redis CPU
// per acquisition), each with one bar and one whisker per lock, and only
// the lines with rounds are charted.
func TestChartHasOneBarPerSeriesInEachPanel(t *testing.T) {
	rs := []*result{
		newResult("contended", "rlock"), // no rounds: not charted
		parallelLine("rlock", []float64{40e3, 50e3, 45e3}, []float64{7, 6.5, 8}),
		parallelLine("rueidislock", []float64{17e3, 18e3, 16e3}, []float64{14, 13, 15}),
		parallelLine("setnx", []float64{13e3, 14e3, 12e3}, []float64{23, 24, 22}),
		parallelLine(autopipelineKind, []float64{68e3, 70e3, 60e3}, []float64{2.8, 2.7, 3}),
		{Scenario: "parallel-compare", Lock: "rlock", Breakdown: map[string]map[string]float64{}},
	}
	series := chartSeriesOf(rs)
	if len(series) != 4 {
		t.Fatalf("%d series, want the 4 lines with rounds: %+v", len(series), series)
	}
	var b strings.Builder
	m := machine{CPU: "AMD EPYC", NumCPU: 2, Go: "go1.26.8", Redis: "7.0.15", Ground: "loopback; PING p50 36µs", LoadAtStart: "10.9 <&> 1"}
	if err := writeChart(&b, m, series); err != nil {
		t.Fatal(err)
	}
	els := readSVG(t, strings.NewReader(b.String()))
	if len(els) == 0 || els[0].name != "svg" {
		t.Fatalf("the document is not an <svg>: %v", els)
	}
	bars, whiskers := map[int]int{}, map[int]int{}
	for _, e := range els {
		switch e.class {
		case "bar":
			bars[e.panel]++
		case "whisker":
			whiskers[e.panel]++
		}
	}
	for _, p := range []int{1, 2} {
		if bars[p] != len(series) || whiskers[p] != len(series) {
			t.Errorf("panel %d: %d bars and %d whiskers, want %d of each", p, bars[p], whiskers[p], len(series))
		}
	}
	if len(bars) != 2 {
		t.Errorf("bars in panels %v, want panels 1 and 2 only", bars)
	}
	for _, want := range []string{"loopback; PING p50 36µs", "acquisitions per second", "redis-server CPU per acquisition", ">45.0k<", ">7.0<", "median of 3 rounds"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("chart lacks %q", want)
		}
	}
}

// A run with no parallel line has nothing to chart, and says so.
func TestChartOfNoParallelLineIsAnError(t *testing.T) {
	err := writeChartFile(filepath.Join(t.TempDir(), "c.svg"), report{Results: []*result{newResult("contended", "rlock")}})
	if !errors.Is(err, errNothingToChart) {
		t.Fatalf("got %v, want errNothingToChart", err)
	}
}

// writeChartFile writes the file -svg names.
func TestChartFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.svg")
	rep := report{Results: []*result{parallelLine("rlock", []float64{1, 2}, []float64{3, 4})}}
	if err := writeChartFile(path, rep); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if els := readSVG(t, f); len(els) == 0 {
		t.Fatal("empty chart")
	}
}

func TestNiceCeil(t *testing.T) {
	for _, c := range []struct{ in, want float64 }{{0, 1}, {0.7, 1}, {1, 1}, {1.2, 2}, {3, 5}, {7, 10}, {49200, 50000}, {68100, 100000}} {
		if got := niceCeil(c.in); got != c.want {
			t.Errorf("niceCeil(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

// A run of the parallel scenario with -svg writes its chart: a bar per
// lock it ran (rlock, rlock-nobatch and both floors) in each panel.
func TestParallelRunWritesItsChart(t *testing.T) {
	t.Parallel()
	cfg := tinyParallel(redistest.Start(t).Addr(), parallelScenario, 2)
	cfg.svg = filepath.Join(t.TempDir(), "parallel.svg")
	rep := runJSON(t, cfg)
	f, err := os.Open(cfg.svg)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	bars := map[int]int{}
	for _, e := range readSVG(t, f) {
		if e.class == "bar" {
			bars[e.panel]++
		}
	}
	want := len(chartSeriesOf(rep.Results))
	if want != 4 || bars[1] != want || bars[2] != want {
		t.Fatalf("bars per panel %v, want %d in panels 1 and 2 (rlock, rlock-nobatch, setnx, setnx-autopipeline)", bars, want)
	}
}
