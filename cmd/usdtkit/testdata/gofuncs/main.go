// Command gofuncs calls functions of many signatures with known values
// and prints, for each call, a JSON line with the arguments and results it
// passed, so that a tracer's view can be compared with the program's own.
//
// It prints "ready PID" and waits for a line on stdin before calling;
// after the calls it prints "done" and exits.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
)

type Server struct {
	name  string
	hits  int64
	next  *Server
	ready bool
}

type Point struct {
	X, Y int32
}

//go:noinline
func Ints(a int8, b int16, c int32, d int64, e uint8, f uint16, g uint32, h uint64) int64 {
	return int64(a) + int64(b) + int64(c) + d + int64(e) + int64(f) + int64(g) + int64(h)
}

//go:noinline
func Str(s string, b []byte, ok bool) (n int, err error) {
	if !ok {
		return -1, errors.New("not ok")
	}
	return len(s) + len(b), nil
}

//go:noinline
func (s *Server) Handle(path string, n int) (string, error) {
	s.hits += int64(n)
	return s.name + path, nil
}

//go:noinline
func Move(p Point, dx int32) Point {
	return Point{p.X + dx, p.Y}
}

//go:noinline
func Sum(xs []int64) (total int64) {
	for _, x := range xs {
		total += x
	}
	return total
}

//go:noinline
func Ptr(s *Server, u uintptr) *Server {
	return s.next
}

type call struct {
	Func    string         `json:"func"`
	Args    map[string]any `json:"args"`
	Results map[string]any `json:"results"`
}

func emit(c call) {
	b, _ := json.Marshal(c)
	fmt.Println(string(b))
}

func main() {
	fmt.Printf("ready %d\n", os.Getpid())
	bufio.NewReader(os.Stdin).ReadString('\n')

	r := Ints(-8, -1600, -320000, -64000000000, 200, 65000, 4000000000, 18000000000000000000)
	emit(call{"main.Ints", map[string]any{"a": -8, "b": -1600, "c": -320000, "d": -64000000000, "e": 200, "f": 65000, "g": 4000000000, "h": uint64(18000000000000000000)}, map[string]any{"r0": r}})

	n, err := Str("héllo, world", []byte("bytes\x00in"), true)
	emit(call{"main.Str", map[string]any{"s": "héllo, world", "b": "bytes\x00in", "ok": true}, map[string]any{"n": n, "err": err}})
	n, err = Str("", nil, false)
	emit(call{"main.Str", map[string]any{"s": "", "b": "", "ok": false}, map[string]any{"n": n, "err": fmt.Sprintf("%T", err)}})

	srv := &Server{name: "srv", hits: 40, ready: true}
	srv.next = &Server{name: "next", hits: 7}
	out, err := srv.Handle("/index", 2)
	emit(call{"main.(*Server).Handle", map[string]any{"s": fmt.Sprintf("%p", srv), "path": "/index", "n": 2, "s.hits": 40, "s.next.hits": 7}, map[string]any{"r0": out, "r1": err}})

	p := Move(Point{X: 3, Y: -4}, 10)
	emit(call{"main.Move", map[string]any{"p.X": 3, "p.Y": -4, "dx": 10}, map[string]any{"r0.X": p.X, "r0.Y": p.Y}})

	tot := Sum([]int64{5, -6, 7})
	emit(call{"main.Sum", map[string]any{"xs": []int64{5, -6, 7}}, map[string]any{"total": tot}})

	nx := Ptr(srv, 0xdead)
	emit(call{"main.Ptr", map[string]any{"s": fmt.Sprintf("%p", srv), "u": 0xdead}, map[string]any{"r0": fmt.Sprintf("%p", nx)}})
	fmt.Println("done")
}
