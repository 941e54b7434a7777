package testsupport

import "errors"

// IsTimeout reports whether err is a timeout: a net.Error's (a read or dial
// deadline) or context.DeadlineExceeded, each of which says so by its
// Timeout method.
func IsTimeout(err error) bool {
	var te interface{ Timeout() bool }
	return errors.As(err, &te) && te.Timeout()
}
