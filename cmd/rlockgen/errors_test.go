package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// module writes a Go module of its own (std imports only) with files into
// a temporary directory and returns the directory.
func module(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	files["go.mod"] = "module example.com/m\n\ngo 1.26\n"
	for name, src := range files {
		path := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(src), 0o644))
	}
	return dir
}

// head starts every x.go of the directive cases: the body begins on line 5.
const head = "package p\n\nimport \"context\"\n\n"

// onM is x.go with the directive d on line 6, on method M of interface B,
// whose parameters are ctx, id and o.
func onM(d string) map[string]string {
	return map[string]string{"x.go": head + `type B interface {
	` + d + `
	M(ctx context.Context, id string, o *O) error
}

type O struct {
	ID string
	F  func()
	In struct{ P *O }
	A
	C
}

func (o *O) Name() string            { return o.ID }
func (o *O) With(x int) string       { return o.ID }
func (o *O) Two() (string, int)      { return o.ID, 0 }
func (o *O) Val() V                  { return V{} }
func (o *O) Bad() Undefined          { return nil }

type V struct{}

func (v *V) Ptr() string { return "" }

type A struct{ X int }
type C struct{ X int }
`}
}

// TestEveryRuleFailsWithFileLineAndMessage runs rlockgen on packages that
// break one rule each and checks every message it prints, in order.
func TestEveryRuleFailsWithFileLineAndMessage(t *testing.T) {
	other := map[string]string{
		"other/other.go": "package other\n\ntype T struct{ *inner }\n\ntype inner struct{ ID string }\n\ntype I interface {\n\tm()\n}\n\ntype J interface {\n\tGet() hidden\n}\n\ntype hidden int\n",
	}
	cases := []struct {
		name  string
		files map[string]string
		types []string
		want  []string
	}{
		// The directive's own syntax.
		{"a misspelt directive", onM(`//rlock:locks key="a"`), nil, []string{"x.go:6: B.M: unknown directive //rlock:locks: want //rlock:lock"}},
		{"no key", onM(`//rlock:lock wait=1s`), nil, []string{`x.go:6: B.M: key="…" is missing: it names the lock`}},
		{"a setting given twice", onM(`//rlock:lock key="a" key="b"`), nil, []string{"x.go:6: B.M: key is given twice"}},
		{"fencing with permits", onM(`//rlock:lock key="a" fencing permits=2`), nil, []string{"x.go:6: B.M: fencing with permits: a semaphore's permits have no fencing tokens"}},
		{"a key not quoted", onM(`//rlock:lock key=a`), nil, []string{`x.go:6: B.M: key= wants a quoted string: key="…"`}},
		{"a group not quoted", onM(`//rlock:lock key="a" group=g`), nil, []string{`x.go:6: B.M: group= wants a quoted string: group="…"`}},
		{"a wait without a value", onM(`//rlock:lock key="a" wait`), nil, []string{"x.go:6: B.M: wait needs a duration: wait=5s"}},
		{"a lease that is not a duration", onM(`//rlock:lock key="a" lease=5`), nil, []string{"x.go:6: B.M: lease=5: not a duration (want one such as 5s or 250ms)"}},
		{"a negative wait", onM(`//rlock:lock key="a" wait=-1s`), nil, []string{"x.go:6: B.M: wait=-1s: must not be negative"}},
		{"zero permits", onM(`//rlock:lock key="a" permits=0`), nil, []string{"x.go:6: B.M: permits=0: want a whole number of at least 1"}},
		{"fencing with a value", onM(`//rlock:lock key="a" fencing=true`), nil, []string{"x.go:6: B.M: fencing takes no value: write fencing alone"}},
		{"rw neither read nor write", onM(`//rlock:lock key="a" rw=both`), nil, []string{"x.go:6: B.M: rw=both: want rw=read (the shared side) or rw=write (the exclusive side)"}},
		{"rw without a value", onM(`//rlock:lock key="a" rw`), nil, []string{"x.go:6: B.M: rw=: want rw=read (the shared side) or rw=write (the exclusive side)"}},
		{"rw quoted", onM(`//rlock:lock key="a" rw="read"`), nil, []string{"x.go:6: B.M: rw=read: want rw=read (the shared side) or rw=write (the exclusive side)"}},
		{"rw with permits", onM(`//rlock:lock key="a" rw=write permits=2`), nil, []string{"x.go:6: B.M: rw= with permits=: a read-write lock has no permits"}},
		{"the read side with fencing", onM(`//rlock:lock key="a" rw=read fencing`), nil, []string{"x.go:6: B.M: rw=read with fencing: only the write side has fencing tokens"}},
		{"a minhold that is not a duration", onM(`//rlock:lock key="a" minhold=2`), nil, []string{"x.go:6: B.M: minhold=2: not a duration (want one such as 5s or 250ms)"}},
		{"a negative minhold", onM(`//rlock:lock key="a" minhold=-1s`), nil, []string{"x.go:6: B.M: minhold=-1s: must not be negative"}},
		{"a minhold longer than the lease", onM(`//rlock:lock key="a" lease=10s minhold=1m`), nil, []string{"x.go:6: B.M: minhold=1m0s with lease=10s: the lease ends the hold before the minimum hold does"}},
		{"an unknown setting", onM(`//rlock:lock key="a" timeout=5s`), nil, []string{"x.go:6: B.M: unknown setting timeout: want key, wait, lease, minhold, permits, rw, fencing or group"}},
		{"a setting without a name", onM(`//rlock:lock key="a" =5s`), nil, []string{`x.go:6: B.M: a setting has no name: "=5s"`}},
		{"an unterminated string", onM(`//rlock:lock key="a`), nil, []string{`x.go:6: B.M: key="a: the string is not terminated`}},
		{"a string with a bad escape", onM(`//rlock:lock key="\q"`), nil, []string{`x.go:6: B.M: key="\q": not a valid Go string`}},

		// The key template.
		{"an empty key", onM(`//rlock:lock key=""`), nil, []string{`x.go:6: B.M: key="": the lock name must not be empty`}},
		{"an unmatched }", onM(`//rlock:lock key="a}"`), nil, []string{`x.go:6: B.M: key "a}": unmatched } (write }} for a literal brace)`}},
		{"an unclosed {", onM(`//rlock:lock key="a{id"`), nil, []string{`x.go:6: B.M: key "a{id": {id is not closed with }`}},
		{"an empty reference", onM(`//rlock:lock key="a{}"`), nil, []string{`x.go:6: B.M: key "a{}": {}: want {param}, {param.Field} or {param.Method()}`}},
		{"a reference ending in a dot", onM(`//rlock:lock key="a{o.}"`), nil, []string{`x.go:6: B.M: key "a{o.}": {o.}: want {param}, {param.Field} or {param.Method()}`}},
		{"a control character", onM(`//rlock:lock key="a\tb"`), nil, []string{`x.go:6: B.M: the key "a\tb" has a control character: no lock name may`}},

		// References against the parameters and their types.
		{"a reference to no parameter", onM(`//rlock:lock key="a{x}"`), nil, []string{"x.go:6: B.M: {x}: x is not a parameter (the parameters are ctx, id, o)"}},
		{"a reference to the context", onM(`//rlock:lock key="a{ctx}"`), nil, []string{"x.go:6: B.M: {ctx}: ctx is the call's context, not part of a key"}},
		{"a pointer printed as an address", onM(`//rlock:lock key="a{o}"`), nil, []string{"x.go:6: B.M: {o}: fmt.Sprint would write the address o holds, not a value (a *O): the key would differ from call to call; reference a field that holds a value, or give the type a String method"}},
		{"a func printed as an address", onM(`//rlock:lock key="a{o.F}"`), nil, []string{"x.go:6: B.M: {o.F}: fmt.Sprint would write the address o.F holds, not a value (a func()): the key would differ from call to call; reference a field that holds a value, or give the type a String method"}},
		{"a struct holding a pointer", onM(`//rlock:lock key="a{o.In}"`), nil, []string{"x.go:6: B.M: {o.In}: fmt.Sprint would write the address o.In.P holds, not a value (a struct{P *O}): the key would differ from call to call; reference a field that holds a value, or give the type a String method"}},
		{"no such field", onM(`//rlock:lock key="a{o.Nope}"`), nil, []string{"x.go:6: B.M: {o.Nope}: *O has no field or method Nope"}},
		{"a field called", onM(`//rlock:lock key="a{o.ID()}"`), nil, []string{"x.go:6: B.M: {o.ID()}: ID is a field, not a method: write it without ()"}},
		{"a method not called", onM(`//rlock:lock key="a{o.Name}"`), nil, []string{"x.go:6: B.M: {o.Name}: Name is a method: write Name()"}},
		{"a method with arguments", onM(`//rlock:lock key="a{o.With()}"`), nil, []string{"x.go:6: B.M: {o.With()}: With takes arguments; a key may call only methods without"}},
		{"a method with two values", onM(`//rlock:lock key="a{o.Two()}"`), nil, []string{"x.go:6: B.M: {o.Two()}: Two must return one value, or a value and an error"}},
		{"an ambiguous field", onM(`//rlock:lock key="a{o.X}"`), nil, []string{"x.go:6: B.M: {o.X}: X is ambiguous in *O"}},
		{"a pointer method on a call's value", onM(`//rlock:lock key="a{o.Val().Ptr()}"`), nil, []string{"x.go:6: B.M: {o.Val().Ptr()}: Ptr has a pointer receiver, and the value of a method call is not addressable"}},
		{"a value whose type does not compile", onM(`//rlock:lock key="a{o.Bad()}"`), nil, []string{"x.go:6: B.M: {o.Bad()}: its type does not compile: fix the package first"}},
		{"a field behind another package's unexported embedded pointer", merge(other, map[string]string{"x.go": head + "import \"example.com/m/other\"\n\ntype B interface {\n\t//rlock:lock key=\"{t.ID}\"\n\tM(ctx context.Context, t other.T) error\n}\n"}), nil,
			[]string{"x.go:8: B.M: {t.ID}: ID is reached through inner, an unexported embedded pointer of package other, which the generated code cannot check for nil"}},

		// The locked method's signature.
		{"no context first", map[string]string{"x.go": head + "type B interface {\n\t//rlock:lock key=\"a\"\n\tM(id string) error\n}\n\nvar _ context.Context\n"}, nil,
			[]string{"x.go:6: B.M: the first parameter must be a context.Context: the call runs with the lock's hold context"}},
		{"no error last", map[string]string{"x.go": head + "type B interface {\n\t//rlock:lock key=\"a\"\n\tM(ctx context.Context) int\n}\n"}, nil,
			[]string{"x.go:6: B.M: the last result must be an error: it reports a lock not acquired or lost"}},
		{"neither", map[string]string{"x.go": head + "type B interface {\n\t//rlock:lock key=\"a\"\n\tM()\n}\n\nvar _ context.Context\n"}, nil, []string{
			"x.go:6: B.M: the first parameter must be a context.Context: the call runs with the lock's hold context",
			"x.go:6: B.M: the last result must be an error: it reports a lock not acquired or lost",
		}},
		{"a signature that does not compile", map[string]string{"x.go": head + "type B interface {\n\t//rlock:lock key=\"a\"\n\tM(ctx context.Context, x Undefined) error\n}\n"}, nil,
			[]string{"x.go:7: B.M: its signature has a type that does not compile: fix the package first"}},

		// The types -type names.
		{"no such type", onM(`//rlock:lock key="a"`), []string{"Nope"}, []string{"-type Nope: no such type in package p"}},
		{"not a type", map[string]string{"x.go": "package p\n\nvar V = 1\n"}, []string{"V"}, []string{"x.go:3: -type V: V is not a type"}},
		{"an alias", map[string]string{"x.go": "package p\n\ntype A = interface{ M() }\n"}, []string{"A"}, []string{"x.go:3: A is an alias: run rlockgen where the interface is declared"}},
		{"a struct", map[string]string{"x.go": "package p\n\ntype S struct{}\n"}, []string{"S"}, []string{"x.go:3: S is not an interface"}},
		{"a generic interface", map[string]string{"x.go": head + "type G[T any] interface {\n\t//rlock:lock key=\"a\"\n\tM(ctx context.Context, t T) error\n}\n"}, []string{"G"},
			[]string{"x.go:5: G has type parameters: generic interfaces are not supported"}},
		{"a constraint", map[string]string{"x.go": "package p\n\ntype C interface {\n\t~int\n\tM()\n}\n"}, []string{"C"}, []string{"x.go:3: C is a constraint (it has a type set), not an interface a value can implement"}},
		{"the constructor's name taken", merge(onM(`//rlock:lock key="a"`), map[string]string{"y.go": "package p\n\nfunc NewLockedB() {}\n"}), nil,
			[]string{"y.go:3: NewLockedB is declared here, and rlockgen declares it for B: rename one"}},
		{"an unexported method of another package", merge(other, map[string]string{"x.go": head + "import \"example.com/m/other\"\n\ntype B interface {\n\tother.I\n\t//rlock:lock key=\"a\"\n\tM(ctx context.Context) error\n}\n"}), nil,
			[]string{"other/other.go:8: B.m is an unexported method of package example.com/m/other: no type of package p can implement it"}},
		{"a type of another package the package cannot name", merge(other, map[string]string{"x.go": head + "import \"example.com/m/other\"\n\ntype B interface {\n\tother.J\n\t//rlock:lock key=\"a\"\n\tM(ctx context.Context) error\n}\n"}), nil,
			[]string{"other/other.go:12: B.Get: its signature uses example.com/m/other.hidden, which package p cannot name"}},
		{"no directive", map[string]string{"x.go": head + "type B interface {\n\tM(ctx context.Context) error\n}\n"}, nil,
			[]string{"x.go:5: B has no method with a //rlock:lock directive: there is nothing to lock"}},
		{"a directive with a space", map[string]string{"x.go": head + "type B interface {\n\t// rlock:lock key=\"a\"\n\tM(ctx context.Context) error\n}\n"}, nil, []string{
			"x.go:5: B has no method with a //rlock:lock directive: there is nothing to lock",
			`x.go:6: B.M: "// rlock:lock key=\"a\"" is not a directive: write //rlock:lock with no space after //`,
		}},
		{"one key template, a mutex and a read-write lock", twoOnB(`key="doc#{id}"`, `key="doc#{id}" rw=read`), nil,
			[]string{`x.go:8: B.N: key "doc#{id}" names the locks that B.M's key "doc#{id}" names (x.go:6): a mutex there, a read-write lock here; one name is one kind of lock`}},
		{"one key shape under other names, a semaphore and a mutex", twoOnB(`key="doc#{id}" permits=2`, `key="doc#{name}"`), nil,
			[]string{`x.go:8: B.N: key "doc#{name}" names the locks that B.M's key "doc#{id}" names (x.go:6): a semaphore of 2 permits there, a mutex here; one name is one kind of lock`}},
		{"one key template, semaphores of different sizes", twoOnB(`key="doc" permits=2`, `key="doc" permits=3`), nil,
			[]string{`x.go:8: B.N: key "doc" names the locks that B.M's key "doc" names (x.go:6): a semaphore of 2 permits there, a semaphore of 3 permits here; one name is one kind of lock`}},
		{"one key template in two interfaces", map[string]string{"x.go": head + "type B interface {\n\t//rlock:lock key=\"a\" rw=write\n\tM(ctx context.Context) error\n}\n\ntype C interface {\n\t//rlock:lock key=\"a\"\n\tN(ctx context.Context) error\n}\n"}, []string{"B", "C"},
			[]string{`x.go:11: C.N: key "a" names the locks that B.M's key "a" names (x.go:6): a read-write lock there, a mutex here; one name is one kind of lock`}},
		{"two directives", onM("//rlock:lock key=\"a\"\n\t//rlock:lock key=\"b\""), nil, []string{"x.go:7: B.M: a second //rlock:lock: one lock per method"}},

		// Directives elsewhere.
		{"a directive on an embedded interface", map[string]string{"x.go": head + "type A interface{ N() }\n\ntype B interface {\n\t//rlock:lock key=\"a\"\n\tA\n\t//rlock:lock key=\"b\"\n\tM(ctx context.Context) error\n}\n"}, nil,
			[]string{"x.go:8: //rlock:lock is on an embedded interface: put it on the method, in the interface that declares it"}},
		{"a directive on a func", merge(onM(`//rlock:lock key="a"`), map[string]string{"y.go": "package p\n\n//rlock:lock key=\"f\"\nfunc F() {}\n"}), nil,
			[]string{"y.go:3: //rlock:lock is not on an interface method: it belongs in the doc comment of a method of an interface that -type names"}},
		{"a directive after a method", map[string]string{"x.go": head + "type B interface {\n\t//rlock:lock key=\"a\"\n\tM(ctx context.Context) error\n\tN(ctx context.Context) error //rlock:lock key=\"n\"\n}\n"}, nil,
			[]string{"x.go:8: //rlock:lock is not on an interface method: it belongs in the doc comment of a method of an interface that -type names"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			types := tc.types
			if types == nil {
				types = []string{"B"}
			}
			dir := module(t, tc.files)
			_, _, err := generate(config{dir: dir, types: types})
			require.Error(t, err)
			var re *ruleError
			require.ErrorAs(t, err, &re, "not a rule error: %v", err)
			assert.Equal(t, tc.want, re.lines)
		})
	}
}

// twoOnB is x.go with an interface B of two methods, M with the directive
// settings dm on line 6 and N with dn on line 8, each taking ctx, id and
// name.
func twoOnB(dm, dn string) map[string]string {
	return map[string]string{"x.go": head + "type B interface {\n\t//rlock:lock " + dm + "\n\tM(ctx context.Context, id, name string) error\n\t//rlock:lock " + dn + "\n\tN(ctx context.Context, id, name string) error\n}\n"}
}

// merge is the union of file sets.
func merge(sets ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, s := range sets {
		for k, v := range s {
			out[k] = v
		}
	}
	return out
}

// TestDirectivesOnOtherInterfacesAreIgnored: a package may hold interfaces
// that another run of rlockgen generates, whatever their directives say.
func TestDirectivesOnOtherInterfacesAreIgnored(t *testing.T) {
	dir := module(t, merge(onM(`//rlock:lock key="a"`), map[string]string{
		"y.go": head + "type Other interface {\n\t//rlock:lock key=\"{nope}\" rw=read\n\tM(ctx context.Context) error\n}\n",
	}))
	_, src, err := generate(config{dir: dir, types: []string{"B"}})
	require.NoError(t, err)
	assert.NotContains(t, string(src), "Other")
}

func TestRunExitCodes(t *testing.T) {
	t.Run("0: the file is written where -output says", func(t *testing.T) {
		dir := module(t, onM(`//rlock:lock key="a{id}"`))
		var stderr strings.Builder
		code := run([]string{"-type", "B", "-output", filepath.Join(dir, "locked.go"), dir}, &stderr)
		require.Equal(t, 0, code, stderr.String())
		_, want, err := generate(config{dir: dir, types: []string{"B"}, output: "locked.go"})
		require.NoError(t, err)
		got, err := os.ReadFile(filepath.Join(dir, "locked.go"))
		require.NoError(t, err)
		assert.Equal(t, string(want), string(got))
		assert.Empty(t, stderr.String())
	})
	t.Run("0: by default <type>_rlock.go in the directory, and a second run overwrites its own file", func(t *testing.T) {
		dir := module(t, onM(`//rlock:lock key="a{id}"`))
		for range 2 {
			var stderr strings.Builder
			require.Equal(t, 0, run([]string{"-type", "B", dir}, &stderr), stderr.String())
		}
		assert.FileExists(t, filepath.Join(dir, "b_rlock.go"))
	})
	t.Run("1: every broken rule on stderr as file:line: message, nothing written", func(t *testing.T) {
		dir := module(t, map[string]string{"x.go": head + "type B interface {\n\t//rlock:lock key=\"{x}\"\n\tM(ctx context.Context) error\n\t//rlock:lock key=\"b\" wait=soon\n\tN(ctx context.Context) error\n}\n"})
		var stderr strings.Builder
		require.Equal(t, 1, run([]string{"-type", "B", dir}, &stderr))
		assert.Equal(t, fmt.Sprintf("%s:6: B.M: {x}: x is not a parameter (the parameters are ctx)\n%s:8: B.N: wait=soon: not a duration (want one such as 5s or 250ms)\n",
			filepath.Join(dir, "x.go"), filepath.Join(dir, "x.go")), stderr.String())
		assert.NoFileExists(t, filepath.Join(dir, "b_rlock.go"))
	})
	t.Run("1: a file rlockgen did not write is not overwritten", func(t *testing.T) {
		files := onM(`//rlock:lock key="a"`)
		files["b_rlock.go"] = "package p\n\n// mine\n"
		dir := module(t, files)
		var stderr strings.Builder
		require.Equal(t, 1, run([]string{"-type", "B", dir}, &stderr))
		assert.Contains(t, stderr.String(), "b_rlock.go exists and was not written by rlockgen")
		got, err := os.ReadFile(filepath.Join(dir, "b_rlock.go"))
		require.NoError(t, err)
		assert.Equal(t, "package p\n\n// mine\n", string(got))
	})
	t.Run("1: a package that does not parse", func(t *testing.T) {
		dir := module(t, map[string]string{"x.go": "package p\n\nfunc {\n"})
		var stderr strings.Builder
		require.Equal(t, 1, run([]string{"-type", "B", dir}, &stderr))
		assert.Contains(t, stderr.String(), "rlockgen: loading the package in "+dir)
	})
	t.Run("1: -type lists a type twice", func(t *testing.T) {
		var stderr strings.Builder
		require.Equal(t, 1, run([]string{"-type", "B,B", t.TempDir()}, &stderr))
		assert.Equal(t, "rlockgen: -type lists B twice\n", stderr.String())
	})
	t.Run("2: no -type", func(t *testing.T) {
		var stderr strings.Builder
		require.Equal(t, 2, run(nil, &stderr))
		assert.Contains(t, stderr.String(), "usage: rlockgen -type T[,T...]")
	})
	t.Run("2: an unknown flag", func(t *testing.T) {
		var stderr strings.Builder
		require.Equal(t, 2, run([]string{"-typo", "B"}, &stderr))
	})
}
