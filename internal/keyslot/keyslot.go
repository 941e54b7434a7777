// Package keyslot computes Redis Cluster's hash slot of a key, the one copy
// of CRC16 in the repository: lockmw groups a cluster's keys by it, and the
// test harness (internal/redistest) places names on masters with it. Its
// test checks it against the server's own CLUSTER KEYSLOT.
package keyslot

import "strings"

// Slots is the number of hash slots of a Redis Cluster.
const Slots = 16384

// Of returns the hash slot of key, 0 to Slots-1: CRC16 (XMODEM) of the key
// modulo Slots, where a key with a hash tag (a non-empty substring between
// the first "{" and the first "}" after it) is hashed by the tag alone, so
// "{user1}.a" and "{user1}.b" share a slot. It is what CLUSTER KEYSLOT
// answers.
func Of(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	return int(crc16(key) % Slots)
}

// crc16 is CRC-16/XMODEM (polynomial 0x1021, initial value 0).
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}
