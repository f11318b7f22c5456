// A Go program (static, its own runtime: clone, futexes, epoll, signals),
// host vs partition (tests/tests/programs.rs): an HTTP server and 200
// requests from 20 goroutines, a Unix socket echo, 1000 sleeping
// goroutines, a file. Prints only deterministic results.
package main

import (
	"crypto/sha256"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sort"
	"sync"
	"time"
)

func main() {
	// HTTP server and client in one process, 200 requests from 20 goroutines.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/h", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintf(w, "hello %s", r.URL.Query().Get("n")) })
	go http.Serve(ln, mux)
	var wg sync.WaitGroup
	var mu sync.Mutex
	got := []string{}
	for g := 0; g < 20; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 10; i++ {
				resp, err := http.Get(fmt.Sprintf("http://%s/h?n=%d-%d", ln.Addr(), g, i))
				if err != nil {
					panic(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				mu.Lock()
				got = append(got, string(b))
				mu.Unlock()
			}
		}(g)
	}
	wg.Wait()
	sort.Strings(got)
	h := sha256.New()
	for _, s := range got {
		h.Write([]byte(s))
	}
	fmt.Printf("http: %d responses, %x\n", len(got), h.Sum(nil)[:8])
	// Unix socket.
	os.Remove("go.sock")
	ul, err := net.Listen("unix", "go.sock")
	if err != nil {
		panic(err)
	}
	go func() { c, _ := ul.Accept(); io.Copy(c, c); c.Close() }()
	c, err := net.Dial("unix", "go.sock")
	if err != nil {
		panic(err)
	}
	c.Write([]byte("unix ping"))
	buf := make([]byte, 9)
	io.ReadFull(c, buf)
	fmt.Printf("unix: %s\n", buf)
	c.Close()
	ul.Close()
	os.Remove("go.sock")
	// Timers and goroutines.
	t0 := time.Now()
	var wg2 sync.WaitGroup
	for i := 0; i < 1000; i++ {
		wg2.Add(1)
		go func() { time.Sleep(10 * time.Millisecond); wg2.Done() }()
	}
	wg2.Wait()
	fmt.Printf("1000 sleeping goroutines: under 2 s %v\n", time.Since(t0) < 2*time.Second)
	// Files.
	os.WriteFile("f.txt", []byte("go file"), 0644)
	b, _ := os.ReadFile("f.txt")
	os.Remove("f.txt")
	fmt.Printf("file: %s\n", b)
}
