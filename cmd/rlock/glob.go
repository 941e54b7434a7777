package main

// globMatch reports whether s matches the Redis glob pattern (SCAN MATCH's
// rules, Redis's stringmatchlen): * any run, ? one byte, [abc] [^abc]
// [a-z] a class, \ escapes. ls matches a namespace's names with it, since
// their keys carry a {hash tag} the pattern does not.
func globMatch(pattern, s string) bool {
	for len(pattern) > 0 {
		switch pattern[0] {
		case '*':
			for len(pattern) > 1 && pattern[1] == '*' {
				pattern = pattern[1:]
			}
			if len(pattern) == 1 {
				return true
			}
			for i := range len(s) + 1 {
				if globMatch(pattern[1:], s[i:]) {
					return true
				}
			}
			return false
		case '?':
			if len(s) == 0 {
				return false
			}
		case '[':
			var ok bool
			if len(s) == 0 {
				return false
			}
			if ok, pattern = globClass(pattern[1:], s[0]); !ok {
				return false
			}
		case '\\':
			if len(pattern) >= 2 {
				pattern = pattern[1:]
			}
			fallthrough
		default:
			if len(s) == 0 || pattern[0] != s[0] {
				return false
			}
		}
		pattern, s = pattern[1:], s[1:]
	}
	return len(s) == 0
}

// globClass matches c against the class that p starts (after its '['),
// returning whether it matched and p from the class's closing ']' on (or
// its last byte, when the class is not closed, as Redis does).
func globClass(p string, c byte) (bool, string) {
	not := len(p) > 0 && p[0] == '^'
	if not {
		p = p[1:]
	}
	match := false
	for {
		switch {
		case len(p) == 0:
			return match != not, "]" // unclosed: Redis ends the pattern here
		case p[0] == '\\' && len(p) >= 2:
			p = p[1:]
			match = match || p[0] == c
		case p[0] == ']':
			return match != not, p
		case len(p) >= 3 && p[1] == '-':
			lo, hi := p[0], p[2]
			if lo > hi {
				lo, hi = hi, lo
			}
			match = match || (c >= lo && c <= hi)
			p = p[2:]
		default:
			match = match || p[0] == c
		}
		p = p[1:]
	}
}
