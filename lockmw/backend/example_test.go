package backend_test

import (
	"context"
	"fmt"
	"log"

	"github.com/go-rlock/rlock/lockmw/backend"
)

// A command's line and its typed reply, as a back-end sets it and the engine
// reads it.
func ExampleCmd() {
	cmd := backend.NewCmd("evalsha", "0123…", 1, "orders:42")
	cmd.SetVal([]any{int64(1), "holder", backend.Error("WRONGTYPE Operation against a key holding the wrong kind of value")})
	v, _ := cmd.Slice()
	key, _ := cmd.FirstKey()
	fmt.Println(key, v[0], v[1], backend.IsWrongType(v[2].(error)))
	// Output: orders:42 1 holder true
}

// Errors cross the seam as values, classed whatever client produced them.
func ExampleIsNoScript() {
	err := fmt.Errorf("acquire: %w", backend.Error("NOSCRIPT No matching script. Please use EVAL."))
	fmt.Println(backend.IsNoScript(err), backend.IsTransient(err), backend.IsTransient(backend.Error("LOADING Redis is loading the dataset in memory")))
	// Output: true false true
}

// logged is a back-end that wraps another and logs every command: it
// embeds backend.Defaults for the capabilities it does not pass on, as
// every back-end does.
type logged struct {
	backend.Defaults
	next backend.Backend
}

func (l logged) Process(ctx context.Context, cmd *backend.Cmd) error {
	log.Println(cmd.Name())
	return l.next.Process(ctx, cmd)
}

func (l logged) Pipeline(ctx context.Context, cmds []*backend.Cmd) error {
	log.Println("pipeline of", len(cmds))
	return l.next.Pipeline(ctx, cmds)
}

func (l logged) Info() backend.Info { return l.next.Info() }

// A back-end of one's own: Process, Pipeline and Info, the capabilities
// from Defaults (a Lock that must wait then fails with
// errors.ErrUnsupported: pass Subscribe on to offer it).
func ExampleDefaults() {
	var b backend.Backend = logged{}
	_, err := b.Subscribe(context.Background(), false, "ch")
	fmt.Println(err)
	// Output: unsupported operation
}
