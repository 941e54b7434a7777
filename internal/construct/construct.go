// Package construct applies constructor options the one way every package of
// this module does (STYLE point 4): the options in order, then one check of
// the result. A nil option or an invalid value panics with one line naming
// the package, the option and the value, as http.ServeMux.Handle does with a
// nil handler: configuration that can never be right is a programmer's
// mistake.
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
