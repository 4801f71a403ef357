// Command gosoak is the target of the Go soak test (trace_gosoak_test.go):
// many goroutines call, in a loop until the run's duration has passed,
//
//   - Recurse, which recurses deeply with a 512-byte array in every frame,
//     so that the goroutine's 8 KiB starting stack must grow, and be copied
//     by runtime.morestack, several times per deep call;
//   - Sleepy, which sleeps between its two results, the thread ids before
//     and after, so that goroutines move between threads in the middle of a
//     traced call;
//   - Rescue, which recovers a panic (raised in it, or in a function it
//     calls) in a deferred call on two calls of three, so that it returns
//     through its deferreturn epilogue.
//
// Every iteration allocates (16 KiB by default) so that the collector runs
// often: it scans (walks) the stacks of goroutines stopped in traced frames
// and shrinks the stacks that deep calls grew, so that the next deep call
// grows them again. (Forcing collections with runtime.GC instead stalls:
// with thousands of runnable goroutines one call takes minutes.)
//
// The program counts its own calls of each function (every level of the
// recursion is a call) and, at the end, prints one JSON object: the counts
// by function name, the thread changes Sleepy saw, the calls during which
// the stack moved, the deepest stack a Recurse leaf saw, and the number of
// collections. A crash ("unexpected return pc", SIGILL, any fatal error)
// exits nonzero before that.
//
// With -wait it prints "ready PID" and waits for a line on stdin before
// starting, so that a tracer can attach first.
//
// Build: go build ./testdata/gosoak (optionally with -gcflags=all=-N -l).
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// frameWords is the size of Recurse's local array: 512 bytes a level.
const frameWords = 64

// stats are the counts the program reports, shared by all workers.
type stats struct {
	recurse, sleepy, rescue atomic.Uint64
	recovered               atomic.Uint64
	migrations              atomic.Uint64
	stackMoves              atomic.Uint64
	maxStack                atomic.Uint64
}

// worker is one goroutine's state.
type worker struct {
	st   *stats
	goid uint64
	// garbage is what the last iteration allocated.
	garbage []byte
}

// spAddr returns an address in its own frame: two calls from one frame
// return the same value unless the caller's stack moved in between.
//
//go:noinline
func spAddr() uintptr {
	var b byte
	return uintptr(unsafe.Pointer(&b))
}

// Recurse calls itself until depth reaches 1, each level with a 512-byte
// array on its stack. top points into the caller's frame: a pointer into
// the stack, which the runtime adjusts when it moves the stack, so that
// the deepest level can tell how much stack the call uses.
//
//go:noinline
func Recurse(w *worker, depth int, seed uint64, top *byte) uint64 {
	w.st.recurse.Add(1)
	var frame [frameWords]uint64
	for i := range frame {
		frame[i] = seed + uint64(i)
	}
	if depth <= 1 {
		if used := uint64(uintptr(unsafe.Pointer(top)) - spAddr()); used < 1<<30 {
			for m := w.st.maxStack.Load(); used > m && !w.st.maxStack.CompareAndSwap(m, used); m = w.st.maxStack.Load() {
			}
		}
		return seed
	}
	r := Recurse(w, depth-1, seed*6364136223846793005+1442695040888963407, top)
	return r ^ frame[r%frameWords]
}

// Sleepy sleeps for d and returns the threads it started and ended on; id
// is the calling goroutine's id, for a tracer to compare with its own.
//
//go:noinline
func Sleepy(w *worker, id uint64, d time.Duration) (before, after int) {
	w.st.sleepy.Add(1)
	before = syscall.Gettid()
	time.Sleep(d)
	after = syscall.Gettid()
	if before != after {
		w.st.migrations.Add(1)
	}
	return before, after
}

var errBoom = errors.New("boom")

// boom panics on multiples of 3, from a frame below Rescue.
//
//go:noinline
func boom(n int) int {
	if n%3 == 0 {
		panic(errBoom)
	}
	return n * 2
}

// Rescue returns 2n, or -1 when a panic (on two calls of three) was
// recovered.
//
//go:noinline
func Rescue(w *worker, n int) (r int) {
	w.st.rescue.Add(1)
	defer func() {
		if e := recover(); e != nil {
			w.st.recovered.Add(1)
			r = -1
		}
	}()
	if n%3 == 1 {
		panic(errBoom)
	}
	return boom(n)
}

// goid returns the current goroutine's id, from the first line of its
// stack trace: "goroutine 7 [running]:".
func goid() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b, _ = bytes.CutPrefix(b, []byte("goroutine "))
	if i := bytes.IndexByte(b, ' '); i > 0 {
		b = b[:i]
	}
	id, _ := strconv.ParseUint(string(b), 10, 64)
	return id
}

// run is one worker's loop until deadline (checked by each worker, so
// that the end does not wait for a main goroutine the scheduler starves).
// One call of Recurse in 32 is deep, its depth cycling through
// 1..maxDepth by a stride; the others are at most 16 deep, so that the
// collector shrinks stacks that deep calls grew (it halves a stack less
// than a quarter used) and the program, traced, keeps the CPUs busy but
// not overloaded. Sleepy's sleeps vary from nap/2 to 3nap/2.
func (w *worker) run(deadline time.Time, maxDepth int, nap time.Duration, garbage, seed int) {
	w.goid = goid()
	for i := seed; time.Now().Before(deadline); i++ {
		depth := 1 + i%16
		if i%32 == 0 {
			depth = 1 + (i*37)%maxDepth
		}
		var marker byte
		sp := spAddr()
		Recurse(w, depth, uint64(i), &marker)
		if spAddr() != sp {
			w.st.stackMoves.Add(1)
		}
		Sleepy(w, w.goid, nap/2+time.Duration(i*7919%1024)*nap/1024)
		Rescue(w, i)
		w.garbage = make([]byte, garbage)
	}
}

type report struct {
	Calls         map[string]uint64 `json:"calls"`
	Recovered     uint64            `json:"recovered"`
	Migrations    uint64            `json:"migrations"`
	StackMoves    uint64            `json:"stack_moves"`
	MaxStackBytes uint64            `json:"max_stack_bytes"`
	GCs           uint32            `json:"gcs"`
	Goroutines    int               `json:"goroutines"`
	GOMAXPROCS    int               `json:"gomaxprocs"`
	Seconds       float64           `json:"seconds"`
}

func main() {
	goroutines := flag.Int("g", 2000, "number of goroutines")
	duration := flag.Duration("d", 30*time.Second, "how long to run")
	maxDepth := flag.Int("depth", 1000, "deepest recursion of Recurse")
	nap := flag.Duration("sleep", 500*time.Millisecond, "average time Sleepy sleeps")
	garbage := flag.Int("garbage", 16<<10, "bytes each iteration allocates, to make the collector run")
	wait := flag.Bool("wait", false, `print "ready PID" and wait for a line on stdin first`)
	flag.Parse()
	if *goroutines < 1 || *maxDepth < 1 {
		fmt.Fprintln(os.Stderr, "gosoak: -g and -depth must be at least 1")
		os.Exit(2)
	}
	if runtime.GOMAXPROCS(0) < 2 {
		runtime.GOMAXPROCS(2)
	}
	if *wait {
		fmt.Printf("ready %d\n", os.Getpid())
		if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
			fmt.Fprintln(os.Stderr, "gosoak: stdin:", err)
			os.Exit(2)
		}
	}

	var st stats
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(*duration)
	for g := range *goroutines {
		wg.Go(func() {
			w := &worker{st: &st}
			w.run(deadline, *maxDepth, *nap, *garbage, g)
		})
	}
	wg.Wait()

	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b, err := json.Marshal(report{
		Calls: map[string]uint64{
			"main.Recurse": st.recurse.Load(),
			"main.Sleepy":  st.sleepy.Load(),
			"main.Rescue":  st.rescue.Load(),
		},
		Recovered:     st.recovered.Load(),
		Migrations:    st.migrations.Load(),
		StackMoves:    st.stackMoves.Load(),
		MaxStackBytes: st.maxStack.Load(),
		GCs:           ms.NumGC,
		Goroutines:    *goroutines,
		GOMAXPROCS:    runtime.GOMAXPROCS(0),
		Seconds:       time.Since(start).Seconds(),
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "gosoak:", err)
		os.Exit(1)
	}
	fmt.Println(string(b))
}
