// Command go-latency is a small worker pool to trace with usdtkit
// programs: Go functions' values by name, and latency per goroutine. See
// README.md.
//
// Request i calls (*Server).handle(paths[i%4], i%6+1), which sleeps n ms
// and returns 404 for "/missing", else 200. At the end it prints "handled
// JOBS requests". With -loop it starts over every -interval.
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"
)

var paths = []string{"/users", "/orders/42", "/health", "/missing"}

// Server counts what it handled.
type Server struct {
	mu   sync.Mutex
	hits map[string]int
}

// handle serves one request: a string and an int in, an int and a
// string out.
//
//go:noinline
func (s *Server) handle(path string, n int) (status int, body string) {
	time.Sleep(time.Duration(n) * time.Millisecond)
	s.mu.Lock()
	s.hits[path]++
	s.mu.Unlock()
	if path == "/missing" {
		return 404, "not found"
	}
	return 200, "ok " + path + " " + strconv.Itoa(n)
}

func run(s *Server, jobs, workers int) {
	work := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				s.handle(paths[i%len(paths)], i%6+1)
			}
		}()
	}
	for i := range jobs {
		work <- i
	}
	close(work)
	wg.Wait()
}

func main() {
	jobs := flag.Int("jobs", 40, "requests to handle")
	workers := flag.Int("workers", 4, "goroutines handling them")
	loop := flag.Bool("loop", false, "handle -jobs requests every -interval until killed")
	interval := flag.Duration("interval", time.Second, "pause between rounds with -loop")
	flag.Parse()
	if *jobs < 0 || *workers < 1 {
		fmt.Fprintln(os.Stderr, "go-latency: -jobs must be 0 or more and -workers 1 or more")
		os.Exit(2)
	}
	s := &Server{hits: map[string]int{}}
	for {
		run(s, *jobs, *workers)
		if !*loop {
			break
		}
		time.Sleep(*interval)
	}
	fmt.Printf("handled %d requests\n", *jobs)
}
