package main

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/go-rlock/rlock/internal/redistest"
)

// A short trace run times every step of the hand-offs it traced. It checks
// no figure against a budget: only that each step was measured, in order.
func TestTraceTimesEveryStep(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	cfg := tiny(srv.Addr())
	cfg.scenarios = []string{"trace"}
	rep := runJSON(t, cfg)
	if len(rep.Results) != 1 {
		t.Fatalf("%d results, want rlock's trace only: %+v", len(rep.Results), rep.Results)
	}
	m := find(t, rep, "trace", "rlock").Metrics
	if m["traced"] < 1 || m["traced"] > m["handoffs"] {
		t.Fatalf("traced %v of %v hand-offs", m["traced"], m["handoffs"])
	}
	for _, st := range traceSteps {
		p50, p90, p99 := m[st.key+"_p50_us"], m[st.key+"_p90_us"], m[st.key+"_p99_us"]
		if m[st.key+"_n"] != m["traced"] || p50 > p90 || p90 > p99 || p99 <= 0 {
			t.Errorf("%s: n=%v p50=%v p90=%v p99=%v, want n=%v and 0 < p50 ≤ p90 ≤ p99", st.label, m[st.key+"_n"], p50, p90, p99, m["traced"])
		}
	}
	if m["ping_p50_us"] <= 0 || m["u_to_l_p50_over_ping_p50"] <= 0 || m["server_us_per_script"] <= 0 || m["scripts"] < m["traced"] {
		t.Errorf("PING p50 %v, ratio %v, server time per script %v over %v scripts", m["ping_p50_us"], m["u_to_l_p50_over_ping_p50"], m["server_us_per_script"], m["scripts"])
	}
}

func TestTraceTextIsAHeaderAndOneLinePerStep(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	cfg := tiny(srv.Addr())
	cfg.scenarios = []string{"trace"}
	var out bytes.Buffer
	if err := run(context.Background(), cfg, &out); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{"trace rlock [workers=4", "U→S ", "S→P ", "S→R ", "R→L ", "P→E ", "U→E ", "U→L ", "PING p50 ", "U→L p50 / PING p50 = ", "server time per script (all scripts) "} {
		if !strings.Contains(text, want) {
			t.Errorf("no %q in:\n%s", want, text)
		}
	}
}

func TestParseHandoffs(t *testing.T) {
	t.Parallel()
	msg := func(kind, channel, payload string) string {
		return kind + "3\r\n$7\r\nmessage\r\n$" + strconv.Itoa(len(channel)) + "\r\n" + channel + "\r\n$" + strconv.Itoa(len(payload)) + "\r\n" + payload + "\r\n"
	}
	const ch = "rlock_handoff:{n}:c2"
	const payload = "c2:7|0|c1:3|meta"
	for _, c := range []struct {
		name      string
		in        string
		waiters   []string
		truncated bool
	}{
		{"a RESP3 push", msg(">", ch, payload), []string{"c2:7"}, false},
		{"a RESP2 array", msg("*", ch, payload), []string{"c2:7"}, false},
		{"two messages in one read", msg(">", ch, payload) + msg(">", ch, "c2:8|0|c3:1|"), []string{"c2:7", "c2:8"}, false},
		{"a subscription reply is skipped", ">3\r\n$9\r\nsubscribe\r\n$" + strconv.Itoa(len(ch)) + "\r\n" + ch + "\r\n:2\r\n", nil, false},
		{"Redisson's message is not a hand-off", msg(">", "redisson_lock__channel:{n}", "0"), nil, false},
		{"a message cut short", msg(">", ch, payload)[:40], nil, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := parseHandoffs([]byte(c.in))
			if (err != nil) != c.truncated {
				t.Errorf("err = %v, want truncated %v", err, c.truncated)
			}
			var waiters []string
			for _, r := range got {
				waiters = append(waiters, r.waiter)
				if !r.parsed || clientOf(r.waiter) != "c2" {
					t.Errorf("read %+v", r)
				}
			}
			if strings.Join(waiters, ",") != strings.Join(c.waiters, ",") {
				t.Errorf("waiters %q, want %q", waiters, c.waiters)
			}
		})
	}
	if got, _ := parseHandoffs([]byte(msg(">", ch, payload))); len(got) != 1 || got[0].prev != "c1:3" {
		t.Errorf("prev of %q: %+v", payload, got)
	}
}
