package testsupport

import (
	"bytes"
	"strings"
	"sync"
)

// LogBuffer is an io.Writer for a logger (slog, log, a printf logger) that
// other goroutines write to while the test reads it.
type LogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *LogBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Count returns how many times s was written so far.
func (b *LogBuffer) Count(s string) int {
	return strings.Count(b.String(), s)
}

// Lines returns the lines written so far.
func (b *LogBuffer) Lines() []string {
	s := strings.TrimSuffix(b.String(), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}
