package redistest

import (
	"context"
	"fmt"
	"strings"
)

// CommandStat is one command's line of INFO commandstats: how many times it
// ran, and the server's time in it (µs, its own work: a script's calls are
// in the script's time too).
type CommandStat struct{ Calls, Usec int64 }

// CommandStats returns each command's CommandStat since the server started
// or since its last CONFIG RESETSTAT: the commands run inside scripts count
// too. Subcommands are named as Redis names them ("config|resetstat").
func (s *Server) CommandStats(ctx context.Context) (map[string]CommandStat, error) {
	info, err := s.Client().Info(ctx, "commandstats").Result()
	if err != nil {
		return nil, err
	}
	out := map[string]CommandStat{}
	for line := range strings.Lines(info) {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		var st CommandStat
		if _, err := fmt.Sscanf(rest, "calls=%d,usec=%d,", &st.Calls, &st.Usec); err != nil {
			return nil, fmt.Errorf("redistest: INFO commandstats line %q: %w", line, err)
		}
		out[strings.TrimPrefix(name, "cmdstat_")] = st
	}
	return out, nil
}

// CommandCalls returns how many times each command ran (CommandStats).
func (s *Server) CommandCalls(ctx context.Context) (map[string]int, error) {
	stats, err := s.CommandStats(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]int, len(stats))
	for name, st := range stats {
		out[name] = int(st.Calls)
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
