// Package faultproxy is a small TCP proxy for the Redis protocol that injects
// network faults between a client and a redis-server in tests.
//
// A [Proxy] listens on a free loopback port and forwards every connection to
// one target address. It reads the client's commands (RESP arrays of bulk
// strings) and the server's replies (RESP2 and RESP3 values, so go-redis'
// default HELLO 3 works) one whole value at a time, pairs each reply with the
// command it answers, and lets a test inject:
//
//   - [Proxy.SetRequestLatency] and [Proxy.SetLatency]: commands on their
//     way to the server, and replies and pushes on their way back, arrive d
//     after the proxy read them. Each direction is a wire with a
//     propagation delay, not a pause per value: a pipeline of N commands
//     arrives d later as a whole, and everything stays in order. On Linux
//     the waits are timed by a timerfd and overshoot by about 0.1 ms (500
//     µs each way gave a PING of 1.2 ms, against 2.2 ms on Go timers,
//     which wait whole milliseconds when the runtime is idle);
//   - [Proxy.SetBlackhole]: replies are read and thrown away, so commands
//     still run on the server but the client never hears back: a timeout
//     after the fact, the worst case for a client that re-sends;
//   - [Proxy.ResetConnections]: every open connection is reset (TCP RST)
//     now, on both sides;
//   - [Proxy.SetRule]: a function that sees each [Command] and returns the
//     [Action] for its reply: [Forward], [Drop] (lose exactly that reply) or
//     [ResetMidReply] (forward the first half of the reply, then reset the
//     connection). [Once] applies an action to the first matching reply only,
//     for example "drop the reply of the first EVALSHA with 5 keys".
//
// A connection that sends a SUBSCRIBE-family command becomes a pub/sub
// connection: its pushes have no command to pair with, so rules no longer
// apply to it; both latencies (pushes are delayed like replies), the black
// hole and resets still do.
//
// # Why not toxiproxy
//
// Shopify's toxiproxy (v2.5.0) does latency, timeouts and resets as a Go
// library too, but it pulls about 15 modules into go.mod (a metrics stack, an
// HTTP API, a logger) for a test helper, and it works on byte streams: it
// cannot lose the reply of one chosen command while the command itself still
// runs, which is the fault that proves a re-sent acquire or unlock does not
// count twice. This package is a few hundred lines on the standard library,
// and knows where one reply ends.
//
// Everything is safe for concurrent use. [Proxy.Close] stops the listener,
// closes every connection and waits for the proxy's goroutines.
package faultproxy
