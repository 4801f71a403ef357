// Command funcs is the fixture of package gofunc's tests: functions of the
// shapes whose entry sites and returns the tests check against
// `go tool objdump`. It is built at test time, for amd64 and arm64, with
// and without DWARF:
//
//	CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go build -o funcs ./testdata/funcs
//	CGO_ENABLED=0 GOOS=linux GOARCH=arm64 go build -ldflags='-s -w' -o funcs ./testdata/funcs
//
// Running it calls each function once and prints "done".
package main

import (
	"errors"
	"fmt"
	"os"
)

// Leaf has a frame small enough to need no stack check.
//
//go:noinline
func Leaf(a, b int) int {
	return a*b + 1
}

// Normal calls another function, so it has a frame and a stack check.
//
//go:noinline
func Normal(s string, n int) (string, error) {
	if n < 0 {
		return "", errors.New("negative")
	}
	return fmt.Sprint(s, n), nil
}

// Large has a frame bigger than the stack guard's slack (StackBig, 4 KiB):
// its stack check guards against underflow with an extra branch.
//
//go:noinline
func Large(i int) byte {
	var buf [64 << 10]byte
	fill(buf[:], byte(i))
	return buf[i%len(buf)]
}

// Medium has a frame bigger than StackSmall (128 bytes) but below
// StackBig: the check compares SP minus the frame.
//
//go:noinline
func Medium(i int) byte {
	var buf [1024]byte
	fill(buf[:], byte(i))
	return buf[i%len(buf)]
}

//go:noinline
func fill(b []byte, v byte) {
	for i := range b {
		b[i] = v
	}
}

// Multi returns from several places.
//
//go:noinline
func Multi(x int) int {
	switch {
	case x < 0:
		return -1
	case x == 0:
		return 0
	case x > 1000:
		fmt.Println("big")
		return 2
	}
	return 1
}

// Recovers defers a call that recovers a panic.
//
//go:noinline
func Recovers(fail bool) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("recovered: %v", r)
		}
	}()
	if fail {
		panic("boom")
	}
	return nil
}

type Server struct {
	name string
	hits int64
}

// Handle is a method on a pointer receiver.
//
//go:noinline
func (s *Server) Handle(path string, n int) (string, error) {
	s.hits += int64(n)
	return s.name + path, nil
}

// Many has more integer arguments than amd64 has argument registers.
//
//go:noinline
func Many(a, b, c, d, e, f, g, h, i, j, k int64, s []byte) (int64, bool) {
	return a + b + c + d + e + f + g + h + i + j + k + int64(len(s)), a > 0
}

// Mixed has floats between integers: they take the float registers.
//
//go:noinline
func Mixed(a int32, f float64, b uint8, p *Server, ok bool) (float64, *Server) {
	if ok {
		return f * float64(a+int32(b)), p
	}
	return 0, nil
}

type Point struct {
	X, Y int32
}

// Move takes and returns a struct by value: one register per field.
//
//go:noinline
func Move(p Point, dx int32) Point {
	return Point{p.X + dx, p.Y}
}

// Map is generic; its instantiation for int is a function of its own.
//
//go:noinline
func Map[T any](xs []T, f func(T) T) []T {
	out := make([]T, len(xs))
	for i, x := range xs {
		out[i] = f(x)
	}
	return out
}

// Outer returns a closure (main.Outer.func1).
//
//go:noinline
func Outer(base int) func(int) int {
	return func(x int) int {
		if x < 0 {
			panic(fmt.Sprint("negative ", x))
		}
		return base + x
	}
}

// inlined is inlined into its only caller and has no code of its own.
func inlined(x int) int { return x + 1 }

func main() {
	s := &Server{name: "srv"}
	r, _ := s.Handle("/x", 2)
	m, _ := Many(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, []byte("x"))
	f, _ := Mixed(1, 2.5, 3, s, true)
	add := Outer(3)
	out := Map([]int{1, 2}, add)
	n, _ := Normal("n", 1)
	pt := Move(Point{1, 2}, 3)
	fmt.Fprintln(os.Stderr, Leaf(2, 3), n, Large(5), Medium(7), Multi(3), Recovers(true), r, m, f, out, pt)
	fmt.Println("done", inlined(len(os.Args)))
}
