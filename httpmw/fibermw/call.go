package fibermw

import (
	"net/http"

	"github.com/gofiber/fiber/v3"
)

// call is one request's passage through httpmw: the next handler that
// httpmw runs under the lock, and the http.ResponseWriter on which httpmw
// writes a refusal, onto c's response.
type call struct {
	c      fiber.Ctx
	ran    bool  // httpmw ran the next handler: the request got its lock
	err    error // what the rest of the chain returned
	header http.Header
	wrote  bool // WriteHeader was called
}

// ServeHTTP runs the rest of the chain with the hold context, r.Context(),
// as c.Context(), and puts the original back when the chain returns or
// panics (then httpmw releases the lock and the panic goes on, to fiber's
// recover middleware).
func (cl *call) ServeHTTP(_ http.ResponseWriter, r *http.Request) {
	cl.ran = true
	orig := cl.c.Context()
	cl.c.SetContext(r.Context())
	defer cl.c.SetContext(orig)
	cl.err = cl.c.Next()
}

// Header is the header of httpmw's answer, set on c's response by
// WriteHeader.
func (cl *call) Header() http.Header {
	if cl.header == nil {
		cl.header = make(http.Header)
	}
	return cl.header
}

// WriteHeader sets the status and the header of httpmw's answer on c's
// response; only the first call counts, as with net/http.
func (cl *call) WriteHeader(code int) {
	if cl.wrote {
		return
	}
	cl.wrote = true
	res := cl.c.Response()
	for name, values := range cl.header {
		for i, v := range values {
			if i == 0 {
				res.Header.Set(name, v)
			} else {
				res.Header.Add(name, v)
			}
		}
	}
	cl.c.Status(code)
}

// Write appends b to the body of c's response.
func (cl *call) Write(b []byte) (int, error) {
	if !cl.wrote {
		cl.WriteHeader(http.StatusOK)
	}
	cl.c.Response().AppendBody(b)
	return len(b), nil
}
