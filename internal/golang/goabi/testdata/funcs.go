// Command funcs has functions of many signatures for goabi's
// TestDWARFAgreement, which builds it for amd64 and arm64 and compares
// goabi.Assign with the DWARF locations of the formal parameters at entry:
//
//	GO111MODULE=off CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go build -o funcs funcs.go
//
// Every function whose name starts with F is checked; all are noinline and
// use every parameter so that each one keeps a location.
package main

import "unsafe"

type Point struct {
	X, Y float64
}

type Mixed struct {
	A int8
	P Point
	B [1]int32
	Z [0]int64
	S string
	C complex64
}

type WithArray struct {
	N int
	A [2]int
}

type WithEmptyPair struct {
	E [2]struct{}
	N int
}

type Small struct {
	A uint16
	B uint8
	C int32
}

type Recv struct{ a, b int }

var sink uintptr

func use(ps ...uintptr) {
	for _, p := range ps {
		sink += p
	}
}

func f64(f float64) uintptr { return uintptr(f) }

//go:noinline
func FInts(a int, b int8, c int16, d int32, e int64, f uint8, g bool, h uintptr) {
	x := uintptr(0)
	if g {
		x = 1
	}
	use(uintptr(a), uintptr(b), uintptr(c), uintptr(d), uintptr(e), uintptr(f), x, h)
}

//go:noinline
func FTooManyInts(a, b, c, d, e, f, g, h, i, j, k int) {
	use(uintptr(a), uintptr(b), uintptr(c), uintptr(d), uintptr(e), uintptr(f), uintptr(g),
		uintptr(h), uintptr(i), uintptr(j), uintptr(k))
}

//go:noinline
func FMidStruct(a, b, c, d, e, f, g, h int, s string, i int) {
	use(uintptr(a), uintptr(b), uintptr(c), uintptr(d), uintptr(e), uintptr(f), uintptr(g),
		uintptr(h), uintptr(len(s)), uintptr(unsafe.Pointer(unsafe.StringData(s))), uintptr(i))
}

//go:noinline
func FFloats(a float64, b int, c float32, d complex128, e complex64, p Point) {
	use(f64(a), uintptr(b), f64(float64(c)), f64(real(d)), f64(imag(d)), f64(float64(real(e))),
		f64(float64(imag(e))), f64(p.X), f64(p.Y))
}

//go:noinline
func FStrings(s string, b []byte, e any, err error, p *int, m map[int]int, ch chan int, fn func(), u unsafe.Pointer) {
	use(uintptr(len(s)), uintptr(len(b)), uintptr(cap(b)), uintptr(unsafe.Pointer(&e)), uintptr(unsafe.Pointer(&err)),
		uintptr(unsafe.Pointer(p)), uintptr(len(m)), uintptr(len(ch)), uintptr(u))
	if fn != nil {
		fn()
	}
}

//go:noinline
func FStructs(m Mixed, w WithArray, n int, ep WithEmptyPair, sm Small, one [1]string) {
	use(uintptr(m.A), f64(m.P.X), f64(m.P.Y), uintptr(m.B[0]), uintptr(len(m.S)), f64(float64(real(m.C))),
		uintptr(w.N), uintptr(w.A[1]), uintptr(n), uintptr(ep.N), uintptr(sm.A), uintptr(sm.B), uintptr(sm.C),
		uintptr(len(one[0])))
}

//go:noinline
func FStack(a uint8, arr [2]uintptr, b uint8, e struct{}, z [0]int64, c [3]byte, d int) {
	use(uintptr(a), arr[0], arr[1], uintptr(b), uintptr(len(z)), uintptr(c[2]), uintptr(d))
	_ = e
}

//go:noinline
func FEmptyPair(ep WithEmptyPair, arr [2]int32, x int, e2 [2]struct{}, y uint16, b [3]bool) {
	use(uintptr(ep.N), uintptr(arr[0]+arr[1]), uintptr(x), uintptr(len(e2)), uintptr(y), uintptr(len(b)))
	if b[0] {
		sink++
	}
}

//go:noinline
func FTooManyFloats(a, b, c, d, e, f, g, h, i, j, k, l, m, n float64, p Point, q float64) {
	use(f64(a+b+c+d+e+f+g+h+i+j+k+l+m+n), f64(p.X), f64(p.Y), f64(q))
}

//go:noinline
func (r Recv) FMethod(s string, x int) int {
	return r.a + r.b + len(s) + x
}

//go:noinline
func (r *Recv) FPtrMethod(x float32) int {
	return r.a + int(x)
}

func main() {
	FInts(1, 2, 3, 4, 5, 6, true, 8)
	FTooManyInts(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11)
	FMidStruct(1, 2, 3, 4, 5, 6, 7, 8, "s", 9)
	FFloats(1, 2, 3, 4i, 5i, Point{6, 7})
	x := 1
	FStrings("s", []byte("b"), 1, nil, &x, map[int]int{}, make(chan int), nil, nil)
	FStructs(Mixed{S: "m"}, WithArray{}, 3, WithEmptyPair{}, Small{}, [1]string{"o"})
	FStack(1, [2]uintptr{2, 3}, 4, struct{}{}, [0]int64{}, [3]byte{}, 5)
	FEmptyPair(WithEmptyPair{N: 1}, [2]int32{2, 3}, 4, [2]struct{}{}, 5, [3]bool{true})
	FTooManyFloats(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, Point{15, 16}, 17)
	r := Recv{1, 2}
	println(r.FMethod("s", 3), r.FPtrMethod(4))
}
