// Package construct applies constructor options the one way every package of
// this module does. The rule: an Option is a func(*config); the constructor
// applies the options in the order given, then checks the result once,
// after every option has run (so that a later option may correct an
// earlier one, and each default is set in one place). A nil option or an
// invalid value panics with one line naming the package, the option and the
// value, as http.ServeMux.Handle does with a nil handler: configuration that
// can never be right is a programmer's mistake.
package construct

// Apply applies opts to cfg in order and returns the result. pkg is the
// package's name and constructor the function the options were given to,
// for the messages; invalid describes the result's first invalid value
// ("WithWait(-1s): must not be negative"), "" when there is none.
func Apply[T any, O ~func(*T)](pkg, constructor string, cfg T, opts []O, invalid func(*T) string) T {
	for _, opt := range opts {
		if opt == nil {
			panic(pkg + ": " + constructor + ": nil Option")
		}
		opt(&cfg)
	}
	if msg := invalid(&cfg); msg != "" {
		panic(pkg + ": " + msg)
	}
	return cfg
}
