package construct_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/go-rlock/rlock/internal/construct"
)

type cfg struct{ n int }

type option func(*cfg)

func add(d int) option { return func(c *cfg) { c.n = c.n*10 + d } }

func invalid(c *cfg) string {
	if c.n < 0 {
		return "WithN(-1): must not be negative"
	}
	return ""
}

func TestApply(t *testing.T) {
	t.Run("applies the options in order to the defaults", func(t *testing.T) {
		got := construct.Apply("pkg", "New", cfg{n: 1}, []option{add(2), add(3)}, invalid)
		assert.Equal(t, 123, got.n)
	})
	t.Run("panics with one line on a nil option", func(t *testing.T) {
		assert.PanicsWithValue(t, "pkg: NewThing: nil Option", func() {
			construct.Apply("pkg", "NewThing", cfg{}, []option{add(1), nil}, invalid)
		})
	})
	t.Run("panics with the first invalid value, checked once after all options", func(t *testing.T) {
		assert.PanicsWithValue(t, "pkg: WithN(-1): must not be negative", func() {
			construct.Apply("pkg", "New", cfg{}, []option{func(c *cfg) { c.n = -1 }}, invalid)
		})
		got := construct.Apply("pkg", "New", cfg{}, []option{func(c *cfg) { c.n = -1 }, func(c *cfg) { c.n = 7 }}, invalid)
		assert.Equal(t, 7, got.n, "a value a later option replaced is not checked")
	})
}
