// Package pgtest runs real PostgreSQL servers for rivermw's tests, with
// River's schema migrated (rivermigrate) into a database of each test's own.
//
// River's jobs live in PostgreSQL, and only a real server gives River's
// semantics (its fetch query, LISTEN/NOTIFY, leader election, the snooze
// and retry updates) with confidence, as internal/redistest does for Redis.
//
// # Servers
//
// Launch starts a postgres process (Server.Close stops it); Start does the
// same for one test and stops it at t.Cleanup. Each server gets
//
//   - the binaries of the newest /usr/lib/postgresql/N/bin (where Debian and
//     Ubuntu keep them; they are not on PATH), else postgres and initdb from
//     PATH; ErrNotFound when there are none (make test installs them:
//     .ci/install-postgres.sh);
//   - a temporary directory holding its data directory (initdb, trust
//     authentication, superuser "postgres", UTF-8, locale C) and its log;
//   - when the tests run as root, which PostgreSQL refuses, an unprivileged
//     user for initdb and postgres: the system user "postgres" that the
//     Debian package creates, else "nobody"; the directory is given to it;
//   - a free loopback port (listen_addresses 127.0.0.1, no Unix socket),
//     picked by listening on 127.0.0.1:0; if another process takes it
//     first, the launch is retried on a new port;
//   - no durability (fsync, synchronous_commit and full_page_writes off): a
//     test's data dies with its server.
//
// Readiness is a poll of a connection with a deadline, never a fixed sleep.
// The postmaster is started with Pdeathsig SIGKILL (Linux), so it does not
// outlive a test binary that crashes; Close stops it with a fast shutdown
// (SIGINT) and reaps it.
//
// # Databases
//
// Server.RiverDB creates a database for one test, a copy (CREATE DATABASE
// … TEMPLATE) of one that River's migrations were run into once per server,
// and returns a pgxpool on it; the pool is closed and the database dropped at
// t.Cleanup. Two River clients on one test's database share its jobs and
// nothing else's.
package pgtest
