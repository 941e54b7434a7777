package pgtest_test

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/go-rlock/rlock/rivermw/internal/pgtest"
)

// A postgres without a testing.TB, as TestMain starts one for a whole test
// binary; tests then take a database each with Server.RiverDB.
func ExampleLaunch() {
	srv, err := pgtest.Launch()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, srv.URL("postgres"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer pool.Close()
	var one int
	err = pool.QueryRow(ctx, "SELECT 1").Scan(&one)
	fmt.Println(one, err)
	// Output: 1 <nil>
}
