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
// A background goroutine forces a garbage collection every 20ms: the
// collector scans (walks) the stacks of goroutines stopped in traced
// frames and shrinks the stacks that deep calls grew, so that the next
// deep call grows them again.
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
	// leafSP is the stack address the deepest level of Recurse saw.
	leafSP uintptr
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
// array on its stack.
//
//go:noinline
func Recurse(w *worker, depth int, seed uint64) uint64 {
	w.st.recurse.Add(1)
	var frame [frameWords]uint64
	for i := range frame {
		frame[i] = seed + uint64(i)
	}
	if depth <= 1 {
		w.leafSP = spAddr()
		return seed
	}
	r := Recurse(w, depth-1, seed*6364136223846793005+1442695040888963407)
	return r ^ frame[r%frameWords]
}

// Sleepy sleeps for d and returns the thread it started and ended on.
//
//go:noinline
func Sleepy(w *worker, goid uint64, d time.Duration) (before, after int) {
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

// run is one worker's loop. One call of Recurse in four is deep, its depth
// cycling through 1..maxDepth by a stride; the others are at most 16 deep,
// so that the collector shrinks stacks that deep calls grew (it halves a
// stack less than a quarter used) and stack scans stay short.
func (w *worker) run(stop *atomic.Bool, maxDepth int, nap time.Duration, seed int) {
	w.goid = goid()
	for i := seed; !stop.Load(); i++ {
		depth := 1 + i%16
		if i%4 == 0 {
			depth = 1 + (i*37)%maxDepth
		}
		top := spAddr()
		Recurse(w, depth, uint64(i))
		if spAddr() != top {
			w.st.stackMoves.Add(1)
		} else if used := uint64(top - w.leafSP); used < 1<<30 {
			for m := w.st.maxStack.Load(); used > m && !w.st.maxStack.CompareAndSwap(m, used); m = w.st.maxStack.Load() {
			}
		}
		Sleepy(w, w.goid, nap)
		Rescue(w, i)
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
	nap := flag.Duration("sleep", time.Millisecond, "time Sleepy sleeps")
	gcEvery := flag.Duration("gc", 20*time.Millisecond, "force a collection this often (0: never)")
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
	var stop atomic.Bool
	var wg sync.WaitGroup
	start := time.Now()
	for g := range *goroutines {
		wg.Go(func() {
			w := &worker{st: &st}
			w.run(&stop, *maxDepth, *nap, g)
		})
	}
	gcDone := make(chan struct{})
	var gcWG sync.WaitGroup
	if *gcEvery > 0 {
		gcWG.Go(func() {
			t := time.NewTicker(*gcEvery)
			defer t.Stop()
			for {
				select {
				case <-gcDone:
					return
				case <-t.C:
					runtime.GC()
				}
			}
		})
	}
	time.Sleep(*duration)
	stop.Store(true)
	wg.Wait()
	close(gcDone)
	gcWG.Wait()

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
