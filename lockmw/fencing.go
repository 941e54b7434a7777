package lockmw

import "time"

// fenceCounterTTL is how long a name's fencing counter,
// redisson_lock_token:{name}, outlives its last token: every token (the
// acquire script, a hand-off, a quorum's fence) sets the counter's TTL to it,
// so that counters of names no longer used do not pile up in Redis (Redisson
// keeps them forever: redisson/redisson#6510).
//
// Tokens stay strictly increasing per name across the counter's expiry: a
// counter that does not exist starts from the server's clock in microseconds
// (lib.lua's rlock_next_token). Let a counter start at S0 (the clock then),
// give n tokens S0+1 … S0+n, the last at clock L, and expire; the server
// expires it no earlier than its clock reads L + TTL (expiry compares the
// clock with an absolute time), so the next counter starts at S1 ≥ L + TTL.
// Its first token S1+1 is above S0+n whenever n ≤ (L − S0) + TTL: fewer
// tokens than the microseconds the counter lived plus the TTL, that is less
// than one token per µs on average (one Redis serves a few hundred thousand
// scripts a second) with a day of slack for bursts and for a clock stepped
// back. A counter that started at 1 (Redisson's, or rlock's before it had a
// TTL) is far below any clock reading. On a quorum every master's counter
// obeys this; the masters' clocks must differ by less than the TTL.
//
// A day is far longer than any lock's TTL needs and short enough that an
// unused name's counter goes within a day. It is not configurable; tests set
// a Client's tokenTTLArg.
const fenceCounterTTL = 24 * time.Hour
