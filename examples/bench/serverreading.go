package main

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// serverReading is one reading of the server's counters: INFO commandstats,
// the redis-server process's CPU time (INFO cpu) and its reads from client
// connections (INFO stats).
type serverReading struct {
	stats map[string]cmdStat
	cpu   time.Duration
	reads int64
}

func readServer(ctx context.Context, admin *redis.Client) (serverReading, error) {
	stats, err := commandStats(ctx, admin)
	if err != nil {
		return serverReading{}, err
	}
	cpu, err := redisCPU(ctx, admin)
	if err != nil {
		return serverReading{}, err
	}
	reads, err := serverReads(ctx, admin)
	if err != nil {
		return serverReading{}, err
	}
	return serverReading{stats: stats, cpu: cpu, reads: reads}, nil
}

// readNodes is readServer summed over every node of e: by command, and
// the CPU time and reads of all (one node's, without -cluster).
func readNodes(ctx context.Context, e *env) (serverReading, error) {
	sum := serverReading{stats: map[string]cmdStat{}}
	for _, n := range e.nodes {
		r, err := readServer(ctx, n)
		if err != nil {
			return serverReading{}, err
		}
		sum.cpu, sum.reads = sum.cpu+r.cpu, sum.reads+r.reads
		for k, st := range r.stats {
			t := sum.stats[k]
			sum.stats[k] = cmdStat{calls: t.calls + st.calls, usec: t.usec + st.usec}
		}
	}
	return sum, nil
}

// serverReads is INFO stats' total_reads_processed: the read system calls
// the server made on client connections so far. Commands per read is how
// deep the clients' pipelines are.
func serverReads(ctx context.Context, admin *redis.Client) (int64, error) {
	info, err := admin.Info(ctx, "stats").Result()
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "total_reads_processed:"); ok {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, nil
}
