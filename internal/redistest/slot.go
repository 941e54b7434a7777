package redistest

import "strings"

// Slot returns the Redis Cluster hash slot of key, 0 to 16383: CRC16
// (XMODEM) of the key modulo 16384, where a key with a hash tag — a non-empty
// substring between the first "{" and the first "}" after it — is hashed by
// the tag alone, so "{user1}.a" and "{user1}.b" share a slot. It is what
// CLUSTER KEYSLOT answers.
func Slot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	return int(crc16(key)) % numSlots
}

// crc16 is CRC-16/XMODEM (polynomial 0x1021, initial value 0), the checksum
// of the Redis Cluster key space.
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
