// Package rpclock is the mechanism that grpcmw and connectmw share: the
// names of an RPC's lock, the lock itself (a mutex, or a semaphore under a
// limit above 1), holding it around a call, and the translation of what
// lockmw says into a status code, a message and a retry delay. The adapters
// only carry these into their protocol's types (grpc's status, connect's
// Error), so that a fleet that serves one method with grpc-go and with
// connect-go locks one name and answers alike.
//
// It lives in the root module, and imports neither grpc nor connect: each
// adapter module imports it, and neither adapter pulls in the other's
// framework. Codes are gRPC's numbers, which connect.Code shares.
package rpclock
