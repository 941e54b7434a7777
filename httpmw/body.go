package httpmw

import (
	"bytes"
	"io"
	"net/http"
	"strings"
)

// An HTTP/1.x server notices that a client went away, and cancels
// r.Context(), only once the handler has read the request's body to its end.
// A request waiting for the lock has not, so without help a client that
// disconnects while sending a POST with a body would go on waiting (and its
// handler would even run). bufferBody reads small bodies before the wait.

// bufferBody reads r's body into memory when it has one of at most limit
// bytes that is not behind "Expect: 100-continue", and returns r with a body
// that replays it; a longer body is replayed from what was read followed by
// the rest. It returns an error when reading fails (the client went away or
// sent a broken body).
func bufferBody(r *http.Request, limit int64) (*http.Request, error) {
	if limit <= 0 || r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 ||
		r.ContentLength > limit || expectsContinue(r) {
		return r, nil
	}
	orig := r.Body
	buf, err := io.ReadAll(io.LimitReader(orig, limit+1))
	if err != nil {
		return r, err
	}
	r2 := new(http.Request)
	*r2 = *r
	if int64(len(buf)) <= limit {
		r2.Body = replay{Reader: bytes.NewReader(buf), Closer: orig}
	} else {
		r2.Body = replay{Reader: io.MultiReader(bytes.NewReader(buf), orig), Closer: orig}
	}
	return r2, nil
}

// replay is a request body that reads from Reader and closes the original.
type replay struct {
	io.Reader
	io.Closer
}

func expectsContinue(r *http.Request) bool {
	for _, v := range r.Header.Values("Expect") {
		if strings.Contains(strings.ToLower(v), "100-continue") {
			return true
		}
	}
	return false
}
