package main

import (
	"context"
	"maps"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// cmdCounter is a go-redis hook that counts the commands a client sends, by
// name, single and pipelined. Pub/sub commands do not go through hooks in
// go-redis; connection set-up (HELLO, CLIENT SETINFO, ...) does, and is
// counted apart. One counter may be added to many clients.
type cmdCounter struct {
	mu     sync.Mutex
	counts map[string]int64
	setup  int64
}

var _ redis.Hook = (*cmdCounter)(nil)

func newCmdCounter() *cmdCounter { return &cmdCounter{counts: map[string]int64{}} }

func (c *cmdCounter) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		return next(ctx, network, addr)
	}
}

func (c *cmdCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.mu.Lock()
		c.addLocked(cmd.Name())
		c.mu.Unlock()
		return next(ctx, cmd)
	}
}

func (c *cmdCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.mu.Lock()
		for _, cmd := range cmds {
			c.addLocked(cmd.Name())
		}
		c.mu.Unlock()
		return next(ctx, cmds)
	}
}

// add counts one command by name, for clients without go-redis hooks.
func (c *cmdCounter) add(name string) {
	c.mu.Lock()
	c.addLocked(name)
	c.mu.Unlock()
}

func (c *cmdCounter) addLocked(name string) {
	switch name {
	case "hello", "client", "auth", "select":
		c.setup++
	default:
		c.counts[name]++
	}
}

// snapshot returns the counts so far.
func (c *cmdCounter) snapshot() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.counts)
}

// delta returns after - before, by name, dropping zeroes, and the total.
func delta(before, after map[string]int64) (map[string]int64, int64) {
	d := map[string]int64{}
	var total int64
	for k, v := range after {
		if n := v - before[k]; n != 0 {
			d[k] = n
			total += n
		}
	}
	return d, total
}

// cmdStat is one command's INFO commandstats entry.
type cmdStat struct{ calls, usec int64 }

// commandStats reads INFO commandstats, by command name (sub-commands as
// "client|list").
func commandStats(ctx context.Context, admin *redis.Client) (map[string]cmdStat, error) {
	info, err := admin.Info(ctx, "commandstats").Result()
	if err != nil {
		return nil, err
	}
	out := map[string]cmdStat{}
	for line := range strings.Lines(info) {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_")
		if !ok {
			continue
		}
		name, fields, ok := strings.Cut(rest, ":")
		if !ok {
			continue
		}
		var st cmdStat
		for f := range strings.SplitSeq(fields, ",") {
			k, v, _ := strings.Cut(f, "=")
			n, _ := strconv.ParseInt(v, 10, 64)
			switch k {
			case "calls":
				st.calls = n
			case "usec":
				st.usec = n
			}
		}
		out[name] = st
	}
	return out, nil
}

// serverCounts is an INFO commandstats difference.
type serverCounts struct {
	calls    map[string]int64 // by command, without the tool's own admin commands
	usec     map[string]int64 // server time by command, same keys
	total    int64            // calls in all
	topUsec  int64            // server time in the commands the clients sent
	topCalls int64
}

// serverDelta is the INFO commandstats difference, without the commands the
// tool's own admin connection sends to take the measure (INFO, PING,
// CLIENT, PUBSUB, DBSIZE). top names the commands the clients sent:
// commands run inside a script are counted in calls, and their time is part
// of the script's, so only the time of top commands adds up to the server
// time spent for the clients.
func serverDelta(before, after map[string]cmdStat, top map[string]int64) serverCounts {
	d := serverCounts{calls: map[string]int64{}, usec: map[string]int64{}}
	for k, a := range after {
		b := before[k]
		n := a.calls - b.calls
		if n == 0 || k == "info" || k == "ping" || k == "dbsize" || strings.HasPrefix(k, "client|") || strings.HasPrefix(k, "pubsub|") {
			continue
		}
		d.calls[k] = n
		d.usec[k] = a.usec - b.usec
		d.total += n
		if _, ok := top[k]; ok {
			d.topUsec += a.usec - b.usec
			d.topCalls += n
		}
	}
	return d
}

// usecPerCall is the mean server time of each command, in µs.
func (d serverCounts) usecPerCall() map[string]float64 {
	out := make(map[string]float64, len(d.calls))
	for k, n := range d.calls {
		out[k] = round(float64(d.usec[k])/float64(n), 2)
	}
	return out
}

// redisCPU is the CPU time (user + system) the redis-server process has
// used, from INFO cpu. Unlike commandstats' usec, which is wall time and
// counts the moments the server was preempted inside a command, it is what
// the server really spent, on commands, network I/O and housekeeping.
func redisCPU(ctx context.Context, admin *redis.Client) (time.Duration, error) {
	info, err := admin.Info(ctx, "cpu").Result()
	if err != nil {
		return 0, err
	}
	var total float64
	for line := range strings.Lines(info) {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && (k == "used_cpu_sys" || k == "used_cpu_user") {
			f, _ := strconv.ParseFloat(v, 64)
			total += f
		}
	}
	return time.Duration(total * float64(time.Second)), nil
}

// pubsubConns counts CLIENT LIST entries with sub>0 or ssub>0 (or psub>0),
// by client name.
func pubsubConns(ctx context.Context, admin *redis.Client) (map[string]int, error) {
	list, err := admin.ClientList(ctx).Result()
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for line := range strings.Lines(list) {
		var name string
		subs := false
		for f := range strings.FieldsSeq(line) {
			k, v, _ := strings.Cut(f, "=")
			switch k {
			case "name":
				name = v
			case "sub", "ssub", "psub":
				if n, _ := strconv.Atoi(v); n > 0 {
					subs = true
				}
			}
		}
		if subs {
			out[name]++
		}
	}
	return out, nil
}

// perOp divides each count by n, for a breakdown.
func perOp(counts map[string]int64, n int) map[string]float64 {
	out := make(map[string]float64, len(counts))
	for k, v := range counts {
		out[k] = round(float64(v)/float64(max(n, 1)), 3)
	}
	return out
}
