package pgtest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// templateDB is the database River's migrations run into, once per server;
// RiverDB copies it.
const templateDB = "river_template"

// setupTimeout bounds the migration of the template and the creation or
// removal of one test's database.
const setupTimeout = time.Minute

// templateOnce makes the template database once per server.
type templateOnce struct {
	once sync.Once
	err  error
}

// RiverDB creates a database for the test with River's schema, a copy of a
// template database migrated once per server with rivermigrate (all
// migrations up), and returns a pool on it. At t.Cleanup the pool is closed
// and the database dropped. The test fails at once when either cannot be
// made.
func (s *Server) RiverDB(t testing.TB) *pgxpool.Pool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	s.template.once.Do(func() { s.template.err = s.migrateTemplate(ctx) })
	if s.template.err != nil {
		t.Fatal(s.template.err)
	}
	s.mu.Lock()
	s.dbs++
	name := fmt.Sprintf("test_%d", s.dbs)
	s.mu.Unlock()
	if err := s.exec(ctx, "CREATE DATABASE "+name+" TEMPLATE "+templateDB); err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.New(ctx, s.URL(name))
	if err != nil {
		t.Fatalf("pgtest: pool on %s: %v", name, err)
	}
	t.Cleanup(func() {
		pool.Close()
		ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
		defer cancel()
		if err := s.exec(ctx, "DROP DATABASE "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("pgtest: %v", err)
		}
	})
	return pool
}

// migrateTemplate creates the template database and runs every River
// migration into it.
func (s *Server) migrateTemplate(ctx context.Context) error {
	if err := s.exec(ctx, "CREATE DATABASE "+templateDB); err != nil {
		return err
	}
	pool, err := pgxpool.New(ctx, s.URL(templateDB))
	if err != nil {
		return fmt.Errorf("pgtest: pool on %s: %w", templateDB, err)
	}
	defer pool.Close() // no session may stay on a template that is copied
	m, err := rivermigrate.New(riverpgxv5.New(pool), nil)
	if err != nil {
		return fmt.Errorf("pgtest: rivermigrate: %w", err)
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("pgtest: migrating River's schema: %w", err)
	}
	return nil
}

// exec runs one statement on the server's "postgres" database, on a
// connection of its own.
func (s *Server) exec(ctx context.Context, sql string) error {
	conn, err := pgx.Connect(ctx, s.URL("postgres"))
	if err != nil {
		return fmt.Errorf("pgtest: connecting: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, sql); err != nil {
		return fmt.Errorf("pgtest: %s: %w", sql, err)
	}
	return nil
}
