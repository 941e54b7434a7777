package main

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// serverReading is one reading of the server's counters: INFO commandstats
// and the redis-server process's CPU time (INFO cpu).
type serverReading struct {
	stats map[string]cmdStat
	cpu   time.Duration
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
	return serverReading{stats: stats, cpu: cpu}, nil
}
