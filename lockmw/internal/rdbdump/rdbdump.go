// Package rdbdump builds the DUMP payload of a lock hash for RESTORE, the
// fast path of a new acquisition (lockmw's mutexfastpath.go): the hash in the
// encoding a server of a given RDB version reads, and Redis's CRC-64.
package rdbdump

import (
	"encoding/binary"
	"hash/crc64"
)

// Kind is the encoding of Payload's payload. A server reads a payload
// of its own RDB version or older: Redis 7 and later (RDB 10) load a hash
// given as a listpack, which is how they keep a small hash, by copying it;
// older servers read the plain hash (RDB 9), which they build field by
// field. The Client's probe (probeRestore) picks the first its server
// takes.
type Kind uint32

const (
	Listpack Kind = iota // RDB 10: a hash in a listpack (Redis 7 and later)
	Plain                // RDB 9: a hash, field by field (Redis 5 and later)
)

// String names the encoding (tests and benchmarks print it).
func (k Kind) String() string {
	if k == Listpack {
		return "listpack (RDB 10)"
	}
	return "hash (RDB 9)"
}

// Payload is the DUMP payload of a lock hash holding field with count 1,
// for RESTORE: the value's type, the hash as RDB writes it in kind's
// encoding, the RDB version, and Redis's CRC-64 of all that.
func Payload(field string, kind Kind) []byte {
	return Append(make([]byte, 0, Overhead+len(field)), field, kind)
}

// Overhead bounds what Payload adds to a field of less than 64 bytes
// (the listpack's, the larger): type 1, blob length 1, listpack header 6,
// the field's entry 1+1, the count's 2, end 1, version 2, CRC 8.
const Overhead = 1 + 1 + 6 + 1 + 1 + 2 + 1 + 2 + 8

// Append appends Payload(field, kind) to b.
func Append(b []byte, field string, kind Kind) []byte {
	start := len(b)
	if kind == Listpack {
		b = appendRDBListpack(b, field)
		b = binary.LittleEndian.AppendUint16(b, rdbVersionListpack)
	} else {
		b = append(b, rdbTypeHash)
		b = appendRDBLen(b, 1) // one field
		b = appendRDBLen(b, len(field))
		b = append(b, field...)
		b = appendRDBLen(b, 1)
		b = append(b, '1')
		b = binary.LittleEndian.AppendUint16(b, rdbVersionPlain)
	}
	return binary.LittleEndian.AppendUint64(b, CRC64(b[start:]))
}

// TypeHashListpack is the first byte of a Listpack payload: RDB's type of
// a hash kept as a listpack.
const TypeHashListpack = 16

const (
	rdbTypeHash        = 4
	rdbVersionPlain    = 9
	rdbVersionListpack = 10
)

// appendRDBListpack appends the hash {field: 1} as RDB writes a listpack
// hash: its type, then the listpack as a string (its length, then its
// bytes). The listpack: its size in bytes (32 bits) and element count (16
// bits), little-endian; the field as a string entry (encoding, bytes,
// back-length) and the count as a 7-bit integer entry (1, back-length 1);
// the end byte.
func appendRDBListpack(b []byte, field string) []byte {
	var hdr, bl [5]byte
	header := listpackStringHeader(hdr[:0], len(field))
	size := len(header) + len(field)
	back := listpackBacklen(bl[:0], size)
	lpLen := 6 + size + len(back) + 2 + 1
	b = append(b, TypeHashListpack)
	b = appendRDBLen(b, lpLen)
	b = binary.LittleEndian.AppendUint32(b, uint32(lpLen))
	b = binary.LittleEndian.AppendUint16(b, 2) // field and value
	b = append(b, header...)
	b = append(b, field...)
	b = append(b, back...)
	b = append(b, 0x01, 0x01) // the integer 1 and its back-length
	return append(b, 0xff)
}

// listpackBacklenLen is the length of listpackBacklen's bytes, as Redis
// sizes it (lpEncodeBacklen: its bounds are one below the 7-bit groups'
// from 2 bytes on, and its validation wants that length).
func listpackBacklenLen(n int) int {
	switch {
	case n <= 127:
		return 1
	case n < 16383:
		return 2
	case n < 2097151:
		return 3
	case n < 268435455:
		return 4
	default:
		return 5
	}
}

// listpackStringHeader appends the encoding byte(s) of a listpack string
// entry of n bytes: 6, 12 or 32 bits of length.
func listpackStringHeader(b []byte, n int) []byte {
	switch {
	case n < 1<<6:
		return append(b, 0x80|byte(n))
	case n < 1<<12:
		return append(b, 0xe0|byte(n>>8), byte(n))
	default:
		return binary.LittleEndian.AppendUint32(append(b, 0xf0), uint32(n))
	}
}

// listpackBacklen appends a listpack entry's back-length, the size of its
// encoding and data (n), in listpackBacklenLen(n) bytes of 7 bits read from
// the end: the last byte holds the lowest bits, each byte but the first has
// its high bit set.
func listpackBacklen(b []byte, n int) []byte {
	k := listpackBacklenLen(n)
	b = append(b, byte(n>>(7*(k-1))))
	for i := k - 2; i >= 0; i-- {
		b = append(b, byte(n>>(7*i))&127|128)
	}
	return b
}

// appendRDBLen appends n in RDB's length encoding.
func appendRDBLen(b []byte, n int) []byte {
	switch {
	case n < 1<<6:
		return append(b, byte(n))
	case n < 1<<14:
		return append(b, byte(0x40|n>>8), byte(n))
	default:
		return binary.BigEndian.AppendUint32(append(b, 0x80), uint32(n))
	}
}

// crcJones is Redis's CRC-64 (Jones polynomial, reflected), the checksum of
// DUMP payloads.
var crcJones = crc64.MakeTable(0x95ac9329ac4bc9b5)

// CRC64 is Redis's crc64(0, p): hash/crc64 starts from and ends with
// the complement, Redis from 0 and as is.
func CRC64(p []byte) uint64 { return ^crc64.Update(^uint64(0), crcJones, p) }
