package lockmw

import (
	"encoding/binary"
	"hash/crc64"
)

// lockDump is the DUMP payload of a lock hash holding field with count 1,
// for RESTORE: the value type (a plain hash), the hash as RDB writes it,
// the RDB version (9: Redis 5 and later read it) and Redis's CRC-64 of all
// that.
func lockDump(field string) []byte {
	return appendLockDump(make([]byte, 0, 1+5+5+len(field)+2+2+8), field)
}

// appendLockDump appends lockDump(field) to b.
func appendLockDump(b []byte, field string) []byte {
	b = append(b, rdbTypeHash)
	b = appendRDBLen(b, 1) // one field
	b = appendRDBLen(b, len(field))
	b = append(b, field...)
	b = appendRDBLen(b, 1)
	b = append(b, '1')
	b = binary.LittleEndian.AppendUint16(b, dumpRDBVersion)
	return binary.LittleEndian.AppendUint64(b, redisCRC64(b))
}

const (
	rdbTypeHash    = 4
	dumpRDBVersion = 9
)

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

// redisCRC64 is Redis's crc64(0, p): hash/crc64 starts from and ends with
// the complement, Redis from 0 and as is.
func redisCRC64(p []byte) uint64 { return ^crc64.Update(^uint64(0), crcJones, p) }
