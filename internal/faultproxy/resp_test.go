package faultproxy

import (
	"bufio"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadValueReadsOneWholeValue(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in string
		typ      byte
	}{
		{"simple string", "+OK\r\n", '+'},
		{"error", "-ERR bad\r\n", '-'},
		{"integer", ":42\r\n", ':'},
		{"bulk string", "$5\r\nhello\r\n", '$'},
		{"bulk string with CRLF inside", "$4\r\na\r\nb\r\n", '$'},
		{"null bulk", "$-1\r\n", '$'},
		{"empty bulk", "$0\r\n\r\n", '$'},
		{"array", "*2\r\n$1\r\na\r\n:1\r\n", '*'},
		{"null array", "*-1\r\n", '*'},
		{"nested array", "*2\r\n*1\r\n+x\r\n$-1\r\n", '*'},
		{"RESP3 null", "_\r\n", '_'},
		{"RESP3 double", ",3.14\r\n", ','},
		{"RESP3 boolean", "#t\r\n", '#'},
		{"RESP3 big number", "(123456789012345678901234567890\r\n", '('},
		{"RESP3 blob error", "!5\r\nERR x\r\n", '!'},
		{"RESP3 verbatim", "=7\r\ntxt:abc\r\n", '='},
		{"RESP3 map", "%2\r\n+a\r\n:1\r\n+b\r\n*1\r\n:2\r\n", '%'},
		{"RESP3 set", "~2\r\n+a\r\n+b\r\n", '~'},
		{"RESP3 push", ">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$1\r\n0\r\n", '>'},
		{"RESP3 attribute before a value", "|1\r\n+ttl\r\n:3\r\n$2\r\nhi\r\n", '$'},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := bufio.NewReader(strings.NewReader(tc.in + "+NEXT\r\n"))
			raw, typ, err := readValue(r, nil)
			require.NoError(t, err)
			assert.Equal(t, tc.in, string(raw))
			assert.Equal(t, string(tc.typ), string(typ))
			raw, _, err = readValue(r, nil)
			require.NoError(t, err)
			assert.Equal(t, "+NEXT\r\n", string(raw), "the next value starts where this one ended")
		})
	}
}

func TestReadValueRejectsBadInput(t *testing.T) {
	t.Parallel()
	for _, in := range []string{"?\r\n", "$abc\r\n", "$3\r\nabcde", "*-2\r\n", "+no crlf\n", "\r\n"} {
		_, _, err := readValue(bufio.NewReader(strings.NewReader(in)), nil)
		assert.Error(t, err, "%q", in)
	}
}

func TestReadValueLongLine(t *testing.T) {
	t.Parallel()
	long := "+" + strings.Repeat("x", 100_000) + "\r\n"
	raw, _, err := readValue(bufio.NewReaderSize(strings.NewReader(long), 16), nil)
	require.NoError(t, err)
	assert.Equal(t, long, string(raw))
}

func TestReadCommand(t *testing.T) {
	t.Parallel()
	in := "*3\r\n$7\r\nEVALSHA\r\n$3\r\nabc\r\n$1\r\n5\r\nPING extra\r\n"
	r := bufio.NewReader(strings.NewReader(in))
	raw, args, err := readCommand(r)
	require.NoError(t, err)
	assert.Equal(t, []string{"EVALSHA", "abc", "5"}, args)
	assert.Equal(t, in[:len(in)-len("PING extra\r\n")], string(raw))
	raw, args, err = readCommand(r)
	require.NoError(t, err)
	assert.Equal(t, []string{"PING", "extra"}, args, "an inline command")
	assert.Equal(t, "PING extra\r\n", string(raw))

	_, _, err = readCommand(bufio.NewReader(strings.NewReader("*1\r\n:1\r\n")))
	assert.ErrorIs(t, err, errProtocol, "arguments are bulk strings")
}
