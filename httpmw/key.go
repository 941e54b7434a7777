package httpmw

import (
	"net/http"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"
)

// PatternKey is the default key function: [KeyPrefix] + r.Pattern, the
// pattern that matched, such as "http:POST /orders/{id}"; "" (no lock) when
// r.Pattern is empty, as it is for a request that matched no pattern or a
// handler that no ServeMux serves (see [Middleware.Wrap] for what the
// middleware does then).
//
// A pattern that names no method ("/orders/{id}", as every chi pattern and
// a ServeMux pattern may) gets the request's method in front, so that GET
// and POST of one route are two locks: "http:POST /orders/{id}". A method
// outside RFC 9110's nine (GET, HEAD, POST, PUT, DELETE, CONNECT, OPTIONS,
// TRACE) and PATCH counts as "_OTHER", as OpenTelemetry's http.request.method
// does, so that made-up methods cannot mint lock names and metric series.
// [WithOneLockPerPath] leaves the method out.
//
// The rare characters of a pattern that the key format uses or the lock
// cannot hold are escaped as %XX: '%', '#', control characters and bytes
// that are not UTF-8. Every other pattern, the common case, appears as is.
func PatternKey(r *http.Request) string {
	if r.Pattern == "" || hasMethod(r.Pattern) {
		return patternKey(r.Pattern)
	}
	return patternKey(knownMethod(r.Method) + " " + r.Pattern)
}

// pathKey is the default key under WithOneLockPerPath: the pattern as it is.
func pathKey(r *http.Request) string {
	return patternKey(r.Pattern)
}

// resourceKey is the default key under WithReadWrite: the pattern without
// its method, so that a route's reads and writes share one lock.
func resourceKey(r *http.Request) string {
	p := r.Pattern
	if hasMethod(p) {
		p = strings.TrimLeft(p[strings.IndexAny(p, " \t"):], " \t")
	}
	return patternKey(p)
}

// safeMethod reports whether m is a safe method (RFC 9110 section 9.2.1),
// which takes the read side of a read-write lock.
func safeMethod(m string) bool {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace, "":
		return true
	}
	return false
}

// hasMethod reports whether a pattern ("[METHOD ][HOST]/[PATH]") starts
// with a method: a space or tab before its first '/'.
func hasMethod(pattern string) bool {
	sp := strings.IndexAny(pattern, " \t")
	slash := strings.IndexByte(pattern, '/')
	return sp >= 0 && (slash < 0 || sp < slash)
}

// knownMethod is m when it is a standard method, else "_OTHER".
func knownMethod(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace:
		return m
	case "":
		return http.MethodGet // a server request's "" means GET
	}
	return "_OTHER"
}

// misplaced reports whether a request with this pattern cannot have come
// through a route: no pattern (the middleware runs before the router
// matched, or outside any router), or a mount's wildcard ("/orders/*",
// chi's Route and Mount), which every route under the mount shares. A
// pattern that names a method is a route's, whatever its end: router
// adapters set "GET /files/*" for echo's catch-all route.
func misplaced(pattern string) bool {
	return pattern == "" || !hasMethod(pattern) && strings.HasSuffix(pattern, "/*")
}

func patternKey(pattern string) string {
	if pattern == "" {
		return ""
	}
	return KeyPrefix + escapePattern(pattern)
}

// escapePattern escapes '%', '#', control characters and invalid UTF-8 as
// %XX, which keeps distinct patterns distinct and a raw '#' free to start
// the path values.
func escapePattern(p string) string {
	clean := true
	for i := 0; i < len(p); {
		r, n := utf8.DecodeRuneInString(p[i:])
		if needsEscape(r, n) {
			clean = false
			break
		}
		i += n
	}
	if clean {
		return p
	}
	var b strings.Builder
	for i := 0; i < len(p); {
		r, n := utf8.DecodeRuneInString(p[i:])
		if needsEscape(r, n) {
			for j := range n {
				writeHex(&b, p[i+j])
			}
		} else {
			b.WriteString(p[i : i+n])
		}
		i += n
	}
	return b.String()
}

func needsEscape(r rune, size int) bool {
	return r == '%' || r == '#' || unicode.IsControl(r) || r == utf8.RuneError && size == 1
}

func writeHex(b *strings.Builder, c byte) {
	const hex = "0123456789ABCDEF"
	b.WriteByte('%')
	b.WriteByte(hex[c>>4])
	b.WriteByte(hex[c&15])
}

// appendPathValues appends "#name=value&name=value..." with the values
// escaped by url.QueryEscape, which escapes '#', '&', '=' and '%': so the
// suffix cannot be confused with another, nor with a pattern escaped by
// escapePattern.
func appendPathValues(key string, r *http.Request, names []string) string {
	size := len(key)
	for _, n := range names {
		size += len(n) + 2 + len(r.PathValue(n)) // exact unless a value needs escaping
	}
	var b strings.Builder
	b.Grow(size)
	b.WriteString(key)
	for i, n := range names {
		if i == 0 {
			b.WriteByte('#')
		} else {
			b.WriteByte('&')
		}
		b.WriteString(n)
		b.WriteByte('=')
		b.WriteString(url.QueryEscape(r.PathValue(n)))
	}
	return b.String()
}
