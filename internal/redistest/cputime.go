package redistest

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// CPUTime returns the CPU time the redis-server has used since it started,
// system and user together (INFO cpu: used_cpu_sys + used_cpu_user), with
// Redis' microsecond resolution.
func (s *Server) CPUTime(ctx context.Context) (time.Duration, error) {
	info, err := s.Client().Info(ctx, "cpu").Result()
	if err != nil {
		return 0, err
	}
	var sum time.Duration
	found := 0
	for line := range strings.Lines(info) {
		for _, k := range []string{"used_cpu_sys:", "used_cpu_user:"} {
			v, ok := strings.CutPrefix(strings.TrimSpace(line), k)
			if !ok {
				continue
			}
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return 0, fmt.Errorf("redistest: INFO cpu line %q: %w", strings.TrimSpace(line), err)
			}
			sum += time.Duration(f * float64(time.Second))
			found++
		}
	}
	if found != 2 {
		return 0, fmt.Errorf("redistest: INFO cpu has no used_cpu_sys and used_cpu_user: %q", info)
	}
	return sum, nil
}
