package main

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// result is one scenario's outcome: metrics for -json, the same figures as
// text fragments for the line, and the targets.
type result struct {
	Scenario  string                        `json:"scenario"`
	Lock      string                        `json:"lock"`
	Params    map[string]string             `json:"params"`
	Metrics   map[string]float64            `json:"metrics"`
	Breakdown map[string]map[string]float64 `json:"breakdown,omitempty"`
	Targets   []target                      `json:"targets,omitempty"`
	Skipped   string                        `json:"skipped,omitempty"`

	params []string // "k=v" in order, for the text line
	parts  []string // text fragments in order
	extra  []string // lines below the first, a block of their own (trace)
}

// target is one performance target: met when value op limit holds.
type target struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Op    string  `json:"op"` // "<=", ">=" or "<"
	Limit float64 `json:"limit"`
	Met   bool    `json:"met"`
	Hard  bool    `json:"hard,omitempty"` // missed, it fails the run (exit 1)
}

func newResult(scenario, lock string) *result {
	return &result{
		Scenario:  scenario,
		Lock:      lock,
		Params:    map[string]string{},
		Metrics:   map[string]float64{},
		Breakdown: map[string]map[string]float64{},
	}
}

func skipped(scenario, lock, why string) *result {
	r := newResult(scenario, lock)
	r.Skipped = why
	return r
}

// param records a parameter of the run.
func (r *result) param(k string, v any) {
	s := fmt.Sprint(v)
	r.Params[k] = s
	r.params = append(r.params, k+"="+s)
}

// num records a plain number; format is a Printf format with one verb.
func (r *result) num(key, format string, v float64) {
	r.Metrics[key] = round(v, 4)
	r.parts = append(r.parts, fmt.Sprintf(format, v))
}

// dur records a duration, in µs under key+"_us".
func (r *result) dur(key, label string, d time.Duration) {
	r.Metrics[key+"_us"] = round(float64(d)/1e3, 1)
	r.parts = append(r.parts, label+"="+fmtDur(d))
}

// note adds a text fragment only.
func (r *result) note(format string, args ...any) {
	r.parts = append(r.parts, fmt.Sprintf(format, args...))
}

// atMost, below and atLeast record a target.
func (r *result) atMost(name string, v, limit float64) {
	r.Targets = append(r.Targets, target{Name: name, Value: round(v, 4), Op: "<=", Limit: round(limit, 4), Met: v <= limit})
}

// hardAtMost records a target whose miss is a defect, not a slow run: run
// returns an error after printing the report.
func (r *result) hardAtMost(name string, v, limit float64) {
	r.atMost(name, v, limit)
	r.Targets[len(r.Targets)-1].Hard = true
}

// hardMissed names the hard targets r missed.
func (r *result) hardMissed() []string {
	var out []string
	for _, t := range r.Targets {
		if t.Hard && !t.Met {
			out = append(out, fmt.Sprintf("%s %s: %v, limit %v", r.Scenario, t.Name, t.Value, t.Limit))
		}
	}
	return out
}

func (r *result) below(name string, v, limit float64) {
	r.Targets = append(r.Targets, target{Name: name, Value: round(v, 4), Op: "<", Limit: round(limit, 4), Met: v < limit})
}

func (r *result) atLeast(name string, v, limit float64) {
	r.Targets = append(r.Targets, target{Name: name, Value: round(v, 4), Op: ">=", Limit: round(limit, 4), Met: v >= limit})
}

// text is the result's line, its fragments separated by tabs (rowWriter
// aligns them). A skipped line has no tab: it takes no part in the
// alignment. A result with extra lines is a block: its first line has no
// tab either, and the extra lines, tab-separated, align among themselves.
func (r *result) text() string {
	if r.Skipped != "" {
		return r.Scenario + " " + r.Lock + " skipped: " + r.Skipped
	}
	cells := []string{r.Scenario, r.Lock}
	if len(r.params) > 0 {
		cells = append(cells, "["+strings.Join(r.params, " ")+"]")
	}
	cells = append(cells, r.parts...)
	if len(r.Targets) > 0 {
		ts := make([]string, len(r.Targets))
		for i, t := range r.Targets {
			verdict := "met"
			if !t.Met {
				verdict = "MISSED"
			}
			ts[i] = fmt.Sprintf("%s %s", t.Name, verdict)
		}
		cells = append(cells, "| targets: "+strings.Join(ts, ", "))
	}
	if len(r.extra) > 0 {
		return strings.Join(cells, " ") + "\n" + strings.Join(r.extra, "\n")
	}
	return strings.Join(cells, "\t")
}

// fmtDur prints d with three significant digits or so.
func fmtDur(d time.Duration) string {
	neg := ""
	if d < 0 {
		neg, d = "-", -d
	}
	switch {
	case d < time.Millisecond:
		return fmt.Sprintf("%s%.0fµs", neg, float64(d)/1e3)
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%s%.2fms", neg, float64(d)/1e6)
	case d < time.Second:
		return fmt.Sprintf("%s%.1fms", neg, float64(d)/1e6)
	default:
		return fmt.Sprintf("%s%.2fs", neg, d.Seconds())
	}
}

func round(v float64, digits int) float64 {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return -1 // JSON has no Inf or NaN
	}
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}

// percentile returns the p-quantile (0 < p ≤ 1) of ds by nearest rank; ds
// must be sorted. It is 0 for an empty ds.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	i := int(math.Ceil(p*float64(len(ds)))) - 1
	return ds[min(max(i, 0), len(ds)-1)]
}

// sorted returns ds sorted, in place.
func sorted(ds []time.Duration) []time.Duration {
	slices.Sort(ds)
	return ds
}

func median(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
