package faultproxy

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// maxBulk bounds one bulk string, as Redis' proto-max-bulk-len does.
const maxBulk = 512 << 20

// maxElems bounds the element count of one aggregate.
const maxElems = 1 << 24

var errProtocol = errors.New("faultproxy: RESP protocol error")

// readLine reads one CRLF-terminated line and appends it, CRLF included,
// to buf. It returns the line without CRLF as well.
func readLine(r *bufio.Reader, buf []byte) ([]byte, []byte, error) {
	line, err := r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		var long []byte
		long = append(long, line...)
		for errors.Is(err, bufio.ErrBufferFull) {
			line, err = r.ReadSlice('\n')
			long = append(long, line...)
		}
		line = long
	}
	if err != nil {
		return buf, nil, err
	}
	if len(line) < 2 || line[len(line)-2] != '\r' {
		return buf, nil, fmt.Errorf("%w: line without CRLF", errProtocol)
	}
	start := len(buf)
	buf = append(buf, line...)
	return buf, buf[start : len(buf)-2], nil
}

func parseLen(b []byte, limit int) (int, error) {
	n, err := strconv.Atoi(string(b))
	if err != nil || n < -1 || n > limit {
		return 0, fmt.Errorf("%w: bad length %q", errProtocol, b)
	}
	return n, nil
}

// readValue reads one whole RESP2 or RESP3 value from r and appends its raw
// bytes to buf. It reports the value's type byte.
func readValue(r *bufio.Reader, buf []byte) ([]byte, byte, error) {
	buf, line, err := readLine(r, buf)
	if err != nil {
		return buf, 0, err
	}
	if len(line) == 0 {
		return buf, 0, fmt.Errorf("%w: empty line", errProtocol)
	}
	typ := line[0]
	switch typ {
	case '+', '-', ':', '_', ',', '#', '(':
		return buf, typ, nil
	case '$', '!', '=':
		n, err := parseLen(line[1:], maxBulk)
		if err != nil || n < 0 {
			return buf, typ, err
		}
		start := len(buf)
		buf = append(buf, make([]byte, n+2)...)
		if _, err := io.ReadFull(r, buf[start:]); err != nil {
			return buf, typ, err
		}
		if !bytes.HasSuffix(buf, []byte("\r\n")) {
			return buf, typ, fmt.Errorf("%w: bulk without CRLF", errProtocol)
		}
		return buf, typ, nil
	case '*', '~', '>', '%', '|':
		n, err := parseLen(line[1:], maxElems)
		if err != nil || n < 0 {
			return buf, typ, err
		}
		if typ == '%' || typ == '|' {
			n *= 2
		}
		for range n {
			if buf, _, err = readValue(r, buf); err != nil {
				return buf, typ, err
			}
		}
		if typ == '|' { // an attribute precedes the value it describes
			return readValue(r, buf)
		}
		return buf, typ, nil
	default:
		return buf, typ, fmt.Errorf("%w: unknown type %q", errProtocol, typ)
	}
}

// readCommand reads one client command: a RESP array of bulk strings, or an
// inline command line. It returns the raw bytes and the arguments.
func readCommand(r *bufio.Reader) ([]byte, []string, error) {
	first, err := r.Peek(1)
	if err != nil {
		return nil, nil, err
	}
	if first[0] != '*' {
		raw, line, err := readLine(r, nil)
		if err != nil {
			return raw, nil, err
		}
		return raw, strings.Fields(string(line)), nil
	}
	raw, line, err := readLine(r, nil)
	if err != nil {
		return raw, nil, err
	}
	n, err := parseLen(line[1:], maxElems)
	if err != nil {
		return raw, nil, err
	}
	args := make([]string, 0, max(n, 0))
	for range n {
		var hdr []byte
		raw, hdr, err = readLine(r, raw)
		if err != nil {
			return raw, nil, err
		}
		if len(hdr) == 0 || hdr[0] != '$' {
			return raw, nil, fmt.Errorf("%w: command argument is not a bulk string", errProtocol)
		}
		size, err := parseLen(hdr[1:], maxBulk)
		if err != nil || size < 0 {
			return raw, nil, fmt.Errorf("%w: bad argument length", errProtocol)
		}
		start := len(raw)
		raw = append(raw, make([]byte, size+2)...)
		if _, err := io.ReadFull(r, raw[start:]); err != nil {
			return raw, nil, err
		}
		args = append(args, string(raw[start:start+size]))
	}
	return raw, args, nil
}
