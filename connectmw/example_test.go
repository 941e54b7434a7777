package connectmw_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"connectrpc.com/connect"
	"connectrpc.com/grpchealth"

	"github.com/go-rlock/rlock/connectmw"
	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/lockmw"
)

// Health checks one at a time across the fleet, under the name grpcmw
// gives the same method: a Check while another server holds
// "rpc:/grpc.health.v1.Health/Check" is answered Aborted.
func Example() {
	srv, err := redistest.Launch(redistest.Config{}) // a real redis-server for the example
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	locks := lockmw.New(srv.Client())
	defer locks.Close()

	i := connectmw.New(locks, connectmw.WithWait(0))
	mux := http.NewServeMux()
	mux.Handle(grpchealth.NewHandler(grpchealth.NewStaticChecker(), connect.WithInterceptors(i)))
	s := httptest.NewServer(mux)
	defer s.Close()

	client := grpchealth.NewClient(http.DefaultClient, s.URL)
	ctx := context.Background()
	resp, err := client.Check(ctx, &grpchealth.CheckRequest{})
	fmt.Println(resp.Status, err)

	other := locks.Mutex("rpc:/grpc.health.v1.Health/Check") // as another server's call
	hold, _ := other.Lock(ctx)
	_, err = client.Check(ctx, &grpchealth.CheckRequest{})
	fmt.Println(connect.CodeOf(err))
	_ = other.Unlock(hold)
	// Output:
	// serving <nil>
	// aborted
}
