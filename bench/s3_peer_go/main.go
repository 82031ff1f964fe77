// Command s3_peer_go is the compiled peer of bench/s3-vs-minio-go.sh:
// it sends the requests of `iolab mdtest -a S3 -F -w SIZE -e SIZE`
// (PUT, HEAD, ranged GET, DELETE of N objects per task, with mdtest's
// keys and bytes, the payload unsigned as iolab sends it) with minio-go,
// the library MinIO's warp is made of, from TASKS goroutines sharing one
// client, phase by phase, and prints each phase's rate (all tasks'
// objects over the phase's time) as JSON.
//
// Usage: s3_peer_go ENDPOINT BUCKET PREFIX N TASKS SIZE
//
//	s3_peer_go bench ... (the requests of `iolab s3bench`: bench.go)
//
//	s3_peer_go mb ENDPOINT BUCKET   (makes the bucket, waiting up to
//	90 s for the server to come up)
//
// (credentials from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY).
package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

func client(endpoint string) *minio.Client {
	u, err := url.Parse(endpoint)
	check(err)
	c, err := minio.New(u.Host, &minio.Options{
		Creds:  credentials.NewStaticV4(os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY"), ""),
		Secure: u.Scheme == "https",
		Region: "us-east-1",
		// Path-style, as iolab addresses a service given by endpoint.
		BucketLookup: minio.BucketLookupPath,
	})
	check(err)
	return c
}

func makeBucket(endpoint, bucket string) {
	c := client(endpoint)
	var err error
	for i := 0; i < 360; i++ {
		if err = c.MakeBucket(context.Background(), bucket, minio.MakeBucketOptions{}); err == nil {
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
	check(err)
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "bench" {
		benchMain(os.Args[2:])
		return
	}
	if len(os.Args) == 4 && os.Args[1] == "mb" {
		makeBucket(os.Args[2], os.Args[3])
		return
	}
	if len(os.Args) != 7 {
		fmt.Fprintln(os.Stderr, "usage: s3_peer_go ENDPOINT BUCKET PREFIX N TASKS SIZE")
		os.Exit(2)
	}
	c := client(os.Args[1])
	bucket, prefix := os.Args[2], os.Args[3]
	n, _ := strconv.Atoi(os.Args[4])
	tasks, _ := strconv.Atoi(os.Args[5])
	size, _ := strconv.Atoi(os.Args[6])
	ctx := context.Background()
	// mdtest's keys: every task's files in one directory.
	key := func(t, i int) string {
		return fmt.Sprintf("%s/test-dir.0-0/mdtest_tree.0/file.mdtest.%d.%d", prefix, t, i)
	}
	phase := func(op func(t, i int) error) float64 {
		var wg sync.WaitGroup
		errs := make(chan error, tasks)
		t0 := time.Now()
		for t := 0; t < tasks; t++ {
			wg.Add(1)
			go func(t int) {
				defer wg.Done()
				for i := 0; i < n; i++ {
					if err := op(t, i); err != nil {
						errs <- err
						return
					}
				}
			}(t)
		}
		wg.Wait()
		close(errs)
		for e := range errs {
			check(e)
		}
		return float64(n*tasks) / time.Since(t0).Seconds()
	}
	rates := map[string]float64{}
	bodies := make([][]byte, tasks)
	for t := range bodies {
		bodies[t] = pattern(size)
	}
	rates["file_create"] = phase(func(t, i int) error {
		// The payload unsigned (UNSIGNED-PAYLOAD), as iolab sends it:
		// minio-go's default over http is a streaming signature (a
		// SHA-256 and an HMAC per 64 KiB chunk, on both sides), which
		// iolab does not do. If-None-Match: * as iolab's exclusive
		// creates send it.
		o := minio.PutObjectOptions{DisableContentSha256: true}
		o.SetMatchETagExcept("*")
		stamp(bodies[t], i)
		_, err := c.PutObject(ctx, bucket, key(t, i), bytes.NewReader(bodies[t]), int64(size), o)
		return err
	})
	rates["file_stat"] = phase(func(t, i int) error {
		_, err := c.StatObject(ctx, bucket, key(t, i), minio.StatObjectOptions{})
		return err
	})
	rates["file_read"] = phase(func(t, i int) error {
		o := minio.GetObjectOptions{}
		check(o.SetRange(0, int64(size)-1))
		r, err := c.GetObject(ctx, bucket, key(t, i), o)
		if err != nil {
			return err
		}
		defer r.Close()
		got, err := io.Copy(io.Discard, r)
		if err == nil && got != int64(size) {
			err = fmt.Errorf("%s: read %d of %d bytes", key(t, i), got, size)
		}
		return err
	})
	rates["file_remove"] = phase(func(t, i int) error {
		return c.RemoveObject(ctx, bucket, key(t, i), minio.RemoveObjectOptions{})
	})
	check(json.NewEncoder(os.Stdout).Encode(rates))
}

// pattern is the bytes mdtest writes without a data seed: byte i is
// i + 1 (mod 256). The same bytes matter: SeaweedFS gzips a body of no
// given type whose first 128 bytes compress well
// (weed/operation/upload_content.go).
func pattern(size int) []byte {
	b := make([]byte, size)
	for i := range b {
		b[i] = byte(i + 1)
	}
	return b
}

// stamp puts the item's number in the first 8 bytes (little-endian), as
// mdtest does.
func stamp(b []byte, item int) {
	if len(b) >= 8 {
		binary.LittleEndian.PutUint64(b, uint64(item))
	} else if len(b) > 0 {
		b[0] = byte(item)
	}
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "s3_peer_go:", err)
		os.Exit(1)
	}
}
