package backend

import (
	"crypto/sha1"
	"encoding/hex"
)

// Script is a Lua script as a value: its source and the SHA1 that EVALSHA
// names it by. The engine owns its scripts; a back-end only runs the
// command lines built from them.
type Script struct {
	src, sha string
}

// NewScript returns the Script of src.
func NewScript(src string) Script {
	sum := sha1.Sum([]byte(src))
	return Script{src: src, sha: hex.EncodeToString(sum[:])}
}

// Source is the script's Lua source, what EVAL and SCRIPT LOAD send.
func (s Script) Source() string { return s.src }

// SHA is the script's SHA1 in hex, what EVALSHA sends.
func (s Script) SHA() string { return s.sha }
