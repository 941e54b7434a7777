package grpcmw

import (
	"context"
	"errors"
	"io"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/go-rlock/rlock/internal/rpclock"
)

// sentFirst refuses a stream whose handler sends before the first receive
// that takes its lock (WithKey): what it sends would not be under the lock.
var sentFirst = &rpclock.Refusal{
	Code: rpclock.Internal,
	Msg:  "server misconfigured: the handler sent before its first receive, which takes the lock of WithKey",
}

// Stream returns the interceptor of streaming calls (client-, server- and
// bidi-streaming), with [Interceptor.Unary]'s waiting and answers.
//
// With the default key, or [WithMetadataKey] alone, the lock is taken
// before the handler runs, and the stream's Context is the hold context.
// With [WithKey] the key may need the request, which a stream delivers
// through its first RecvMsg (a server-streaming handler's generated code
// receives it before calling the method): the handler gets a wrapped stream
// whose first RecvMsg receives the message, calls the key function with it
// (nil when the client sent none: RecvMsg then returns [io.EOF] once the
// lock is held), and takes the lock; a refusal is returned by that RecvMsg
// and ends the call with its code. Until then the stream's Context is the
// call's, and a SendMsg is refused with [codes.Internal] (what it sends
// would not be under the lock).
//
// While the lock is held, a stream whose lock is lost has its Context
// cancelled with cause [lockmw.ErrLockLost]; the messages it sent before are
// delivered, its later SendMsg and RecvMsg return [codes.Aborted], and the
// call ends [codes.Aborted] whatever the handler returns. The lock is
// released when the handler returns or panics.
func (i *Interceptor) Stream() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		s := &stream{ServerStream: ss, i: i, method: info.FullMethod, pending: i.cfg.key != nil}
		if !s.pending {
			name, r := i.name(ss.Context(), info.FullMethod, nil)
			if r == nil {
				r = s.acquire(name)
			}
			if r != nil {
				return s.refuse(r)
			}
		}
		if err := s.serve(srv, handler); !errors.Is(err, errRefused) {
			return err
		}
		return s.refuse(s.refusal)
	}
}

// errRefused is serve's answer when the call ends with s.refusal.
var errRefused = errors.New("grpcmw: refused")

// stream is a ServerStream under its lock. RecvMsg is called by one
// goroutine at a time, SendMsg maybe by another at once: mu guards the
// state both read.
type stream struct {
	grpc.ServerStream
	i      *Interceptor
	method string

	mu      sync.Mutex
	pending bool             // the lock waits for the first RecvMsg (WithKey) to take it
	started bool             // that RecvMsg has begun
	hold    *rpclock.Hold    // the hold; nil while pending or unlocked
	refusal *rpclock.Refusal // why the call ends refused; nil while it may go on
}

// serve runs handler on s and releases the lock when it returns or panics
// (the panic goes on); errRefused when the call ends with s.refusal.
func (s *stream) serve(srv any, handler grpc.StreamHandler) error {
	released := false
	defer func() {
		if !released {
			s.release()
		}
	}()
	err := handler(srv, s)
	released = true
	if s.release() {
		return errRefused
	}
	return err
}

// release releases the lock, if held, and reports whether the call ends
// refused: its lock was lost, or it was refused before.
func (s *stream) release() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hold != nil {
		if r := s.hold.Release(); r != nil && s.refusal == nil {
			s.refusal = r
		}
		s.hold = nil
	}
	return s.refusal != nil
}

// acquire takes the lock called name ("" for none) and records the hold,
// or the refusal it returns.
func (s *stream) acquire(name string) *rpclock.Refusal {
	if name == "" {
		return nil
	}
	h, r := s.i.core.Acquire(s.ServerStream.Context(), name, s.i.core.Group(s.method))
	s.mu.Lock()
	defer s.mu.Unlock()
	if r != nil && s.refusal == nil {
		s.refusal = r
	}
	s.hold = h
	return r
}

// taken ends the wait for the first receive: its lock is held, refused or
// not needed ("" key), or the receive failed.
func (s *stream) taken() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pending = false
}

// refuse ends the call with r: its status, with the pushback trailer.
func (s *stream) refuse(r *rpclock.Refusal) error {
	return refuse(r, s.ServerStream.SetTrailer)
}

// check is the error of a send or receive now: the refusal, the loss of
// the lock, or (for a send) that the lock is not yet taken; nil to go on.
// It reports whether the lock waits for this receive.
func (s *stream) check(send bool) (first bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.refusal != nil:
	case s.hold != nil:
		s.refusal = s.hold.Lost()
	case s.pending && send: // also while the first receive takes the lock
		s.refusal = sentFirst
	case s.pending && !s.started:
		s.started = true
		return true, nil
	}
	if s.refusal != nil {
		return false, refuse(s.refusal, func(metadata.MD) {})
	}
	return false, nil
}

// Context is the hold context once the lock is held, else the call's.
func (s *stream) Context() context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hold != nil {
		return s.hold.Context()
	}
	return s.ServerStream.Context()
}

// SendMsg sends m unless the call is refused, its lock lost, or its lock
// not yet taken (WithKey, before the first receive).
func (s *stream) SendMsg(m any) error {
	if _, err := s.check(true); err != nil {
		return err
	}
	return s.ServerStream.SendMsg(m)
}

// RecvMsg receives m unless the call is refused or its lock lost; the first
// receive under WithKey takes the lock with m as the key's request.
func (s *stream) RecvMsg(m any) error {
	first, err := s.check(false)
	if err != nil {
		return err
	}
	err = s.ServerStream.RecvMsg(m)
	if !first {
		return err
	}
	defer s.taken()
	if err != nil && err != io.EOF {
		return err
	}
	req := m
	if err == io.EOF {
		req = nil
	}
	name, r := s.i.name(s.ServerStream.Context(), s.method, req)
	if r == nil {
		r = s.acquire(name)
	} else {
		s.mu.Lock()
		s.refusal = r
		s.mu.Unlock()
	}
	if r != nil {
		return refuse(r, func(metadata.MD) {})
	}
	if _, err := s.check(false); err != nil { // a send came first meanwhile
		return err
	}
	return err
}
