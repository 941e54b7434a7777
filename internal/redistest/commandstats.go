package redistest

import (
	"context"
	"fmt"
	"strings"
)

// CommandCalls returns how many times each command ran on the server since
// it started or since its last CONFIG RESETSTAT, from INFO commandstats:
// the commands run inside scripts count too. Subcommands are named as Redis
// names them ("config|resetstat").
func (s *Server) CommandCalls(ctx context.Context) (map[string]int, error) {
	info, err := s.Client().Info(ctx, "commandstats").Result()
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for line := range strings.Lines(info) {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		var n int
		if _, err := fmt.Sscanf(rest, "calls=%d,", &n); err != nil {
			return nil, fmt.Errorf("redistest: INFO commandstats line %q: %w", line, err)
		}
		out[strings.TrimPrefix(name, "cmdstat_")] = n
	}
	return out, nil
}

// CommandsRun returns how many commands the server ran so far, those inside
// scripts too, but for INFO (which reading it runs): what a benchmark counts
// per operation.
func (s *Server) CommandsRun(ctx context.Context) (int, error) {
	calls, err := s.CommandCalls(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for name, k := range calls {
		if name != "info" {
			n += k
		}
	}
	return n, nil
}
