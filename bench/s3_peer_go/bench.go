// The s3bench side of the peer: the requests of `iolab s3bench BENCH`
// sent with minio-go (warp's library) from CONCURRENT goroutines sharing
// one client, for the same time, on the same kind of keys
// (PREFIX/WORKER/NUMBER) and random bodies, the payload unsigned as
// iolab sends it.
//
//	s3_peer_go bench BENCH ENDPOINT BUCKET PREFIX CONCURRENT SECONDS SIZE OBJECTS
//
// BENCH is get, put, stat, delete, list (one page of 100 keys of the
// worker's objects a request) or mixed (warp's 45/30/15/10 plus 10 LIST,
// as iolab's smooth round-robin deals them, each worker on its own
// pool). OBJECTS are uploaded first (not timed), shared out as iolab
// does: object i belongs to worker i % CONCURRENT. Prints
// {"requests": N, "seconds": S, "rate": N/S}; the objects are removed.
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"math/bits"
	mrand "math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/minio/minio-go/v7"
)

type peer struct {
	c       *minio.Client
	core    minio.Core
	bucket  string
	prefix  string
	workers int
	size    int
	body    []byte
}

func (p *peer) key(w int, seq uint64) string {
	return p.prefix + "/" + strconv.Itoa(w) + "/" + strconv.FormatUint(seq, 10)
}

func (p *peer) put(ctx context.Context, key string) error {
	o := minio.PutObjectOptions{DisableContentSha256: true, ContentType: "application/octet-stream"}
	_, err := p.c.PutObject(ctx, p.bucket, key, bytes.NewReader(p.body), int64(p.size), o)
	return err
}

func (p *peer) get(ctx context.Context, key string) error {
	r, err := p.c.GetObject(ctx, p.bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return err
	}
	defer r.Close()
	n, err := io.Copy(io.Discard, r)
	if err == nil && n != int64(p.size) {
		err = fmt.Errorf("%s: %d of %d bytes", key, n, p.size)
	}
	return err
}

func (p *peer) stat(ctx context.Context, key string) error {
	_, err := p.c.StatObject(ctx, p.bucket, key, minio.StatObjectOptions{})
	return err
}

func (p *peer) del(ctx context.Context, key string) error {
	return p.c.RemoveObject(ctx, p.bucket, key, minio.RemoveObjectOptions{})
}

// worker is one goroutine's state: its own objects and listing token.
type worker struct {
	id    int
	pool  []uint64
	next  uint64
	token string
	rng   *mrand.Rand
	step  int
}

// mixOps is warp's default mix plus LIST, dealt by smooth weighted
// round-robin over a cycle of 1000, as iolab deals it.
func mixOps() []string {
	names := []string{"get", "stat", "put", "delete", "list"}
	counts := []int{409, 273, 136, 91, 91} // 45, 30, 15, 10, 10 of 110
	sum := 0
	for _, c := range counts {
		sum += c
	}
	cur := make([]int, len(counts))
	out := make([]string, 0, sum)
	for i := 0; i < sum; i++ {
		best := 0
		for k := range counts {
			cur[k] += counts[k]
			if cur[k] > cur[best] {
				best = k
			}
		}
		cur[best] -= sum
		out = append(out, names[best])
	}
	return out
}

func (p *peer) one(ctx context.Context, bench string, w *worker, objects int, ops []string) (bool, error) {
	op := bench
	if bench == "mixed" {
		op = ops[(w.id*len(ops)/p.workers+w.step)%len(ops)]
		w.step++
	}
	if bench == "mixed" && len(w.pool) == 0 && (op == "get" || op == "stat" || op == "delete") {
		// iolab passes such a draw over, as here.
		return p.one(ctx, bench, w, objects, ops)
	}
	switch op {
	case "get", "stat":
		var key string
		if bench == "mixed" {
			key = p.key(w.id, w.pool[w.rng.IntN(len(w.pool))])
		} else {
			i := w.rng.IntN(objects)
			key = p.key(i%p.workers, uint64(i/p.workers))
		}
		if op == "get" {
			return true, p.get(ctx, key)
		}
		return true, p.stat(ctx, key)
	case "put":
		seq := w.next
		w.next++
		w.pool = append(w.pool, seq)
		return true, p.put(ctx, p.key(w.id, seq))
	case "delete":
		if len(w.pool) == 0 {
			return false, nil
		}
		i := w.rng.IntN(len(w.pool))
		seq := w.pool[i]
		w.pool[i] = w.pool[len(w.pool)-1]
		w.pool = w.pool[:len(w.pool)-1]
		return true, p.del(ctx, p.key(w.id, seq))
	case "list":
		r, err := p.core.ListObjectsV2(p.bucket, p.prefix+"/"+strconv.Itoa(w.id)+"/", "", w.token, "", 100)
		if err == nil {
			w.token = r.NextContinuationToken
		}
		return true, err
	}
	return false, fmt.Errorf("unknown benchmark %q", op)
}

func (p *peer) prepare(ctx context.Context, objects int, ws []*worker) {
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Add(1)
		go func(w *worker) {
			defer wg.Done()
			for i := w.id; i < objects; i += p.workers {
				check(p.put(ctx, p.key(w.id, w.next)))
				w.pool = append(w.pool, w.next)
				w.next++
			}
		}(w)
	}
	wg.Wait()
}

func (p *peer) cleanup(ctx context.Context, ws []*worker) {
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Add(1)
		go func(w *worker) {
			defer wg.Done()
			for _, seq := range w.pool {
				check(p.del(ctx, p.key(w.id, seq)))
			}
		}(w)
	}
	wg.Wait()
}

func benchMain(args []string) {
	if len(args) != 8 {
		fmt.Fprintln(os.Stderr, "usage: s3_peer_go bench BENCH ENDPOINT BUCKET PREFIX CONCURRENT SECONDS SIZE OBJECTS")
		os.Exit(2)
	}
	bench := args[0]
	workers, _ := strconv.Atoi(args[4])
	secs, _ := strconv.ParseFloat(args[5], 64)
	size, _ := strconv.Atoi(args[6])
	objects, _ := strconv.Atoi(args[7])
	c := client(args[1])
	p := &peer{c: c, core: minio.Core{Client: c}, bucket: args[2], prefix: args[3], workers: workers, size: size, body: make([]byte, size)}
	_, err := rand.Read(p.body)
	check(err)
	ctx := context.Background()
	ws := make([]*worker, workers)
	for i := range ws {
		ws[i] = &worker{id: i, rng: mrand.New(mrand.NewPCG(uint64(i), bits.RotateLeft64(uint64(i), 32)))}
	}
	if bench != "put" {
		p.prepare(ctx, objects, ws)
	}
	ops := mixOps()
	var requests atomic.Int64
	var last atomic.Int64
	var wg sync.WaitGroup
	t0 := time.Now()
	deadline := t0.Add(time.Duration(secs * float64(time.Second)))
	for _, w := range ws {
		wg.Add(1)
		go func(w *worker) {
			defer wg.Done()
			for time.Now().Before(deadline) {
				more, err := p.one(ctx, bench, w, objects, ops)
				check(err)
				if !more {
					return
				}
				requests.Add(1)
				end := int64(time.Since(t0))
				for {
					l := last.Load()
					if end <= l || last.CompareAndSwap(l, end) {
						break
					}
				}
			}
		}(w)
	}
	wg.Wait()
	s := time.Duration(last.Load()).Seconds()
	p.cleanup(ctx, ws)
	n := requests.Load()
	check(json.NewEncoder(os.Stdout).Encode(map[string]float64{
		"requests": float64(n), "seconds": s, "rate": float64(n) / s,
	}))
}
