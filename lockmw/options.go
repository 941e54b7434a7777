package lockmw

import (
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode"

	"github.com/go-rlock/rlock/internal/construct"
)

// DefaultWatchdogTimeout is the TTL of a lock held without a lease, renewed
// every third of it: Redisson's lockWatchdogTimeout.
const DefaultWatchdogTimeout = 30 * time.Second

// DefaultReleaseTimeout bounds Unlock, UnlockAt and the clean-up a waiter does
// when it gives up; they run detached from the caller's (maybe cancelled)
// context. It is twice go-redis's default ReadTimeout (5s): on a client that
// does not honour context deadlines (go-redis's default) a release longer
// than the client's read timeout runs on the caller's goroutine and still
// returns in time (go-redis retries it for the first 5s at most), where a
// shorter one needs a goroutine per call.
const DefaultReleaseTimeout = 10 * time.Second

// Option configures a [Client]. [New] and [NewQuorum] apply the options in
// order, then check the result once: an invalid value, or a nil Option,
// makes them panic with one line that names the option and the value. See
// "Options" in the package documentation for the rules of the three option
// kinds.
type Option func(*options)

// LockOption configures one lock handle, a [Mutex] or a [Semaphore]: the
// options of [Client.Mutex] and [Client.Semaphore]. A handle is made per
// request: a nil LockOption is skipped, and only a combination that can
// never be right panics ([WithFencing] on a semaphore). See "Options" in the
// package documentation for the rules of the three option kinds.
type LockOption func(*lockOptions)

type options struct {
	watchdog       time.Duration
	clientID       string
	clientIDSet    bool // WithClientID was given: "" is then an error, not the default
	hooks          Hooks
	logger         *slog.Logger
	releaseTimeout time.Duration
	replicas       int
	replicaTimeout time.Duration
	replicaSet     bool // WithReplicaSync was given
	noBatching     bool // WithoutBatching
	namespace      string
	namespaceSet   bool // WithNamespace was given: "" is then an error
}

type lockOptions struct {
	fencing bool
	group   string
	adapter string
}

// WithWatchdogTimeout sets the TTL of locks held without a lease; the
// watchdog renews them every d/3. The default is [DefaultWatchdogTimeout]
// (30s). A hold whose renewals fail is cancelled before d has passed since
// the last successful renewal was sent. d must be positive and at least 3ms
// (New panics otherwise).
func WithWatchdogTimeout(d time.Duration) Option {
	return func(o *options) { o.watchdog = d }
}

// WithClientID sets the client's ID, the first half of every owner field
// ("<clientID>:<ownerID>"). The default is a random UUID. Owner IDs count up
// from 1 for each Client, so two Clients that are alive at the same time must
// never share an ID, and a restarted process must not reuse the ID of one whose
// locks may still exist: otherwise one would re-enter the other's locks. The
// ID must be non-empty and contain no '|' (New panics otherwise).
func WithClientID(id string) Option {
	return func(o *options) { o.clientID, o.clientIDSet = id, true }
}

// WithHooks sets the event callbacks (see [Hooks]); several calls combine
// their hooks in order, as [CombineHooks] does. The default is no hooks.
func WithHooks(h Hooks) Option {
	return func(o *options) { o.hooks = CombineHooks(o.hooks, h) }
}

// WithoutBatching turns batching off: each of the Client's round trips
// then takes a connection of its own, as plain go-redis calls do. By
// default, the Client's Lock, TryLock and Unlock calls that overlap share
// pipelines on a single Redis and per master on a cluster (not on a
// quorum): a call that
// finds no round trip under way is sent at once, the others queued
// meanwhile go out together when it returns. Each call still returns by
// its own context's deadline. See "Batching" in the package documentation.
func WithoutBatching() Option {
	return func(o *options) { o.noBatching = true }
}

// WithLogger sets the logger for background events: renewal failures, lost
// locks, subscription errors. The default is silent (a discarding logger).
// A nil logger makes New panic.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) { o.logger = l }
}

// WithReleaseTimeout bounds Unlock, UnlockAt and a waiter's clean-up, which
// run detached from the caller's context so that a cancelled context still
// releases. The default is [DefaultReleaseTimeout] (10s). It must be positive
// (New panics otherwise). Releases begun together share a deadline, so one
// may run up to a hundredth of d (at most 10ms) longer.
func WithReleaseTimeout(d time.Duration) Option {
	return func(o *options) { o.releaseTimeout = d }
}

// WithFencing makes the mutex hand out fencing tokens: every new hold (not a
// re-entry) takes INCR redisson_lock_token:{name} inside the acquire script,
// so a token is strictly greater than that of any earlier hold of the name.
// Read it with [Mutex.Token]. Redisson's RFencedLock also counts re-entries;
// rlock gives a re-entry the token of the hold it re-enters. The counter
// expires a day after its last token, so counters of names no longer used do
// not pile up; a new counter starts from the server's clock in microseconds,
// so tokens keep increasing across its expiry (docs/waiting.md says why). The
// default is no tokens. A semaphore's permits have no tokens: WithFencing
// makes [Client.Semaphore] panic.
func WithFencing() LockOption {
	return func(o *lockOptions) { o.fencing = true }
}

// WithGroup names the group the lock belongs to, a bounded label for the
// lock's metrics: the hooks' events carry it beside the name (Group), and
// otelhooks counts the lock under it instead of its name. Adapters whose
// lock names are per entity set it to what the names are made from:
// httpmw's route pattern, asynqmw's task type. The group belongs to the
// handle, not to the lock: it is not stored in Redis, handles of one name
// with different groups are still the same lock (they re-enter and wait
// for each other), and each reports its own group for the acquisitions it
// makes; a hold reports the group of the handle that took it, whichever
// handle re-enters it. The default is "": no group, and the metrics use the
// name.
func WithGroup(group string) LockOption {
	return func(o *lockOptions) { o.group = group }
}

// newLockOptions applies opts in order, skipping nil ones (Client.Mutex
// never panics).
func newLockOptions(opts []LockOption) lockOptions {
	var o lockOptions
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return o
}

// WithReplicaSync makes every new acquisition of every kind (a mutex's hold,
// a semaphore's permit) wait until replicas replicas have acknowledged it
// (Redis WAIT, at most timeout); when fewer do, the lock or permit is
// released and the acquisition fails with an error matching
// ErrNotReplicated. Redisson documents the same idea but fails only when no
// replica acknowledges. It narrows, but does not close, the window in which a
// fail-over to a replica that missed the lock hands it to a second owner. The
// default is off. replicas must be at least 1 and timeout positive (New
// panics otherwise).
func WithReplicaSync(replicas int, timeout time.Duration) Option {
	return func(o *options) { o.replicas, o.replicaTimeout, o.replicaSet = replicas, timeout, true }
}

// newOptions applies opts over the defaults, in order, then checks the result
// once; it panics, with one line naming the option and the value, on a nil
// Option or an invalid value.
// WithNamespace starts every key and channel the Client's locks use with
// prefix: the lock's own key (a lock named "orders:42" is the key
// prefix+"{orders:42}"; a name with a {hash tag} of its own is prefix+name), its queue, waiter table, fencing counter, latches and
// channels, a semaphore's and a read-write lock's keys, and the adapters'
// marks (asynqmw's dedup mark); each lock's keys still share one hash
// slot. So a service can run under a Redis ACL user confined to its prefix
// (~prefix* &prefix*, docs/security.md), and two services on one Redis
// never share a lock, a queue or a channel. Names in errors, hooks and
// Holder stay as the caller gave them.
//
// A namespaced Client is not wire-compatible with Redisson, nor with a
// Client without the namespace (or with another), on the same names:
// Redisson's key and channel names are fixed. The default is none. An
// empty prefix, or one with a brace or a control character, panics in New.
func WithNamespace(prefix string) Option {
	return func(o *options) { o.namespace, o.namespaceSet = prefix, true }
}

func newOptions(opts []Option) options {
	o := options{
		watchdog:       DefaultWatchdogTimeout,
		logger:         slog.New(slog.DiscardHandler),
		releaseTimeout: DefaultReleaseTimeout,
	}
	o = construct.Apply("lockmw", "New", o, opts, (*options).invalid)
	return o
}

// invalid describes the first invalid value of o, "" when there is none.
func (o *options) invalid() string {
	switch {
	case o.watchdog < 3*time.Millisecond:
		return fmt.Sprintf("WithWatchdogTimeout(%v): must be at least 3ms", o.watchdog)
	case o.clientIDSet && o.clientID == "":
		return `WithClientID(""): the client ID must not be empty`
	case strings.ContainsRune(o.clientID, '|'):
		return fmt.Sprintf("WithClientID(%q): the client ID must not contain '|'", o.clientID)
	case o.logger == nil:
		return "WithLogger(nil): a logger is required"
	case o.releaseTimeout <= 0:
		return fmt.Sprintf("WithReleaseTimeout(%v): must be positive", o.releaseTimeout)
	case o.replicaSet && o.replicas < 1:
		return fmt.Sprintf("WithReplicaSync(%d, %v): replicas must be at least 1", o.replicas, o.replicaTimeout)
	case o.replicaSet && o.replicaTimeout <= 0:
		return fmt.Sprintf("WithReplicaSync(%d, %v): timeout must be positive", o.replicas, o.replicaTimeout)
	case o.namespaceSet && o.namespace == "":
		return `WithNamespace(""): the namespace must not be empty`
	case strings.ContainsAny(o.namespace, "{}"):
		return fmt.Sprintf("WithNamespace(%q): the namespace must not contain a brace (the keys' hash tags are rlock's)", o.namespace)
	case strings.IndexFunc(o.namespace, unicode.IsControl) >= 0:
		return fmt.Sprintf("WithNamespace(%q): the namespace must not contain a control character", o.namespace)
	}
	return ""
}
