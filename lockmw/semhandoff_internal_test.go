package lockmw

import (
	"context"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A waiter that finds the permit already handed to it, by its next attempt
// (the hand-off's message not read yet: the attempt that follows its
// subscription's confirmation, or a back-off's) or by leaving the queue as
// its wait runs out, takes it without dropping the waiter table that the
// hand-off kept for the claim window: the semaphore's hand-offs in a row
// live there, and must survive however the waiter claims. Before the fix,
// those scripts ran rlock_tidy on the emptied queue, which dropped the
// table and the count with it (TestSemaphoreReservingRelease's "without a
// Redisson subscriber" case failed 1 run in 40 to 90 under load, when b's
// attempt after its subscription's confirmation came just after a's
// release).
func TestSemaphoreRetryAfterHandoffKeepsTheCount(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		claim func(ctx context.Context, s *Semaphore, a attempt) bool
	}{
		{"by its next attempt", func(ctx context.Context, s *Semaphore, a attempt) bool {
			a.queued = true
			r, err := s.try(ctx, a)
			require.NoError(t, err)
			return r.won
		}},
		{"by leaving the queue as its wait runs out", func(ctx context.Context, s *Semaphore, a attempt) bool {
			_, kept, err := s.leaveOnce(ctx, a.field, true, a.ttl)
			require.NoError(t, err)
			return kept
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := redistest.Start(t)
			ctx := context.Background()
			ca, cb := New(srv.NewClient()), New(srv.NewClient(), WithWatchdogTimeout(10*time.Minute))
			t.Cleanup(func() { _ = ca.Close(); _ = cb.Close() })
			sa, sb := ca.Semaphore("sem-retry", 1), cb.Semaphore("sem-retry", 1)
			ha, err := sa.Lock(ctx)
			require.NoError(t, err)

			field := cb.id + ":retry"
			a := attempt{field: field, fieldArg: field, ttl: 10 * time.Minute, enqueue: true}
			r, err := sb.try(ctx, a)
			require.NoError(t, err)
			require.False(t, r.won, "a holds the only permit: b queues")
			rdb := srv.Client()
			require.NoError(t, rdb.HSet(ctx, sb.k.waiters, "rlock:handoffs", 3).Err())

			require.NoError(t, sa.Unlock(ha)) // handed to b, which empties the queue
			_, err = rdb.ZScore(ctx, sb.k.permits, field).Result()
			require.NoError(t, err, "the permit was handed to b")
			require.Equal(t, "4", rdb.HGet(ctx, sb.k.waiters, "rlock:handoffs").Val())

			require.True(t, tc.claim(ctx, sb, a), "b takes the permit handed to it")
			assert.Equal(t, "4", rdb.HGet(ctx, sb.k.waiters, "rlock:handoffs").Val(), "the hand-offs in a row outlive the claim")
			assert.Positive(t, rdb.PTTL(ctx, sb.k.waiters).Val(), "the table still expires with the claim window")
		})
	}
}
