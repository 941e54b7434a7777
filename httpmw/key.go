package httpmw

import (
	"net/http"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"
)

// PatternKey is the default key function: [KeyPrefix] + r.Pattern, the
// ServeMux pattern that matched, such as "http:POST /orders/{id}"; "" (no
// lock) when r.Pattern is empty, as it is for a request that matched no
// pattern or a handler that is not served by a ServeMux.
//
// The rare characters of a pattern that the key format uses or the lock
// cannot hold are escaped as %XX: '%', '#', control characters and bytes
// that are not UTF-8. Every other pattern, the common case, appears as is.
func PatternKey(r *http.Request) string {
	return patternKey(r.Pattern)
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
	var b strings.Builder
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
