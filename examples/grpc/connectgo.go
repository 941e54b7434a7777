package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"

	"connectrpc.com/connect"
	"connectrpc.com/grpchealth"
	"google.golang.org/genproto/googleapis/rpc/errdetails"

	"github.com/go-rlock/rlock/connectmw"
	"github.com/go-rlock/rlock/lockmw"
)

// checker is grpchealth's Checker whose Check does the journal's work.
type checker struct{ j *journal }

func (c checker) Check(ctx context.Context, _ *grpchealth.CheckRequest) (*grpchealth.CheckResponse, error) {
	if err := c.j.checkWork(ctx, "connect-go"); err != nil {
		return nil, err
	}
	return &grpchealth.CheckResponse{Status: grpchealth.StatusServing}, nil
}

// startConnect starts the connect-go instance on a loopback port, over h2c;
// its client speaks the gRPC protocol.
func startConnect(locks *lockmw.Client, j *journal) (*instance, error) {
	mux := http.NewServeMux()
	mux.Handle(grpchealth.NewHandler(checker{j}, connect.WithInterceptors(connectmw.New(locks, connectmw.WithWait(wait)))))
	var p http.Protocols
	p.SetHTTP1(true)
	p.SetUnencryptedHTTP2(true)
	s := &http.Server{Handler: mux, Protocols: &p}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = s.Serve(lis)
	}()
	var h2c http.Protocols
	h2c.SetUnencryptedHTTP2(true)
	hc := &http.Client{Transport: &http.Transport{Protocols: &h2c}}
	client := grpchealth.NewClient(hc, "http://"+lis.Addr().String(), connect.WithGRPC())
	return &instance{
		name: "connect-go",
		check: func(ctx context.Context) error {
			_, err := client.Check(ctx, &grpchealth.CheckRequest{})
			return err
		},
		busy: func(ctx context.Context) string {
			_, err := client.Check(ctx, &grpchealth.CheckRequest{})
			if ce, ok := errors.AsType[*connect.Error](err); ok {
				for _, d := range ce.Details() {
					if v, derr := d.Value(); derr == nil {
						if ri, ok := v.(*errdetails.RetryInfo); ok {
							return fmt.Sprintf("%v, retry in %v (RetryInfo)", ce.Code(), ri.GetRetryDelay().AsDuration())
						}
					}
				}
			}
			return fmt.Sprint(err)
		},
		stop: func() {
			hc.CloseIdleConnections()
			_ = s.Close()
			<-served
		},
	}, nil
}
