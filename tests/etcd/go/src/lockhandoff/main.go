// lockhandoff times etcd's own Go mutex (clientv3/concurrency 3.4) against
// one endpoint, for the server benchmark (benches/server-workloads.mjs):
//
//   - first Lock: Lock of a free mutex (a new name each time) by a client
//     whose session is open, then Unlock; the program's very first Lock
//     (its first call on the connection after the session's grant) apart;
//   - handoff: two clients (two connections, a session each) take turns on
//     one mutex: the holder calls Unlock while the other waits in Lock
//     (queued for settleMs); the time from the Unlock call until the
//     waiter's Lock returns.
//
// Each part runs at most <n> times and stops at <max ms>. It prints one
// JSON line: milliseconds, median and p99 of each part.
//
// Usage: lockhandoff <endpoint> <n> <max ms>
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"time"

	"go.etcd.io/etcd/clientv3"
	"go.etcd.io/etcd/clientv3/concurrency"
)

type stats struct {
	N      int     `json:"n"`
	Median float64 `json:"median"`
	P99    float64 `json:"p99"`
	Max    float64 `json:"max"`
}

func summary(ms []float64) stats {
	if len(ms) == 0 {
		return stats{}
	}
	s := append([]float64(nil), ms...)
	sort.Float64s(s)
	at := func(p float64) float64 {
		i := int(p / 100 * float64(len(s)))
		if i >= len(s) {
			i = len(s) - 1
		}
		return s[i]
	}
	return stats{N: len(s), Median: at(50), P99: at(99), Max: s[len(s)-1]}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "lockhandoff:", err)
	b, _ := json.Marshal(map[string]string{"error": err.Error()})
	fmt.Println(string(b))
	os.Exit(1)
}

// How long the holder keeps the lock once the waiter is queued.
const settleMs = 150

func since(t time.Time) float64 { return float64(time.Since(t).Nanoseconds()) / 1e6 }

func session(endpoint string) (*clientv3.Client, *concurrency.Session) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second})
	if err != nil {
		fail(err)
	}
	s, err := concurrency.NewSession(cli, concurrency.WithTTL(60))
	if err != nil {
		fail(err)
	}
	return cli, s
}

func main() {
	if len(os.Args) != 4 {
		fail(fmt.Errorf("usage: lockhandoff <endpoint> <n> <max ms>"))
	}
	endpoint := os.Args[1]
	n, err1 := strconv.Atoi(os.Args[2])
	maxMs, err2 := strconv.Atoi(os.Args[3])
	if err1 != nil || err2 != nil || n < 1 || maxMs < 1 {
		fail(fmt.Errorf("n and max ms must be positive whole numbers"))
	}
	deadline := time.Now().Add(time.Duration(maxMs) * time.Millisecond)
	call := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.Background(), 10*time.Second)
	}
	prefix := fmt.Sprintf("/bench-lock/%d", time.Now().UnixNano())

	cliA, sA := session(endpoint)
	defer cliA.Close()
	cliB, sB := session(endpoint)
	defer cliB.Close()

	// First Lock: a free mutex each time.
	var first []float64
	var veryFirst float64
	for i := 0; i < n && (i == 0 || time.Now().Before(deadline)); i++ {
		m := concurrency.NewMutex(sA, fmt.Sprintf("%s/free/%d", prefix, i))
		ctx, cancel := call()
		t := time.Now()
		if err := m.Lock(ctx); err != nil {
			fail(fmt.Errorf("first lock: %v", err))
		}
		ms := since(t)
		if i == 0 {
			veryFirst = ms
		} else {
			first = append(first, ms)
		}
		if err := m.Unlock(ctx); err != nil {
			fail(fmt.Errorf("unlock: %v", err))
		}
		cancel()
	}

	// Handoff: A holds, B waits; A unlocks; B's Lock returns; then roles swap.
	name := prefix + "/handoff"
	sessions := []*concurrency.Session{sA, sB}
	holder := concurrency.NewMutex(sA, name)
	{
		ctx, cancel := call()
		if err := holder.Lock(ctx); err != nil {
			fail(fmt.Errorf("handoff: first holder: %v", err))
		}
		cancel()
	}
	var handoff []float64
	handoffDeadline := deadline.Add(time.Duration(maxMs) * time.Millisecond)
	for i := 0; i < n && time.Now().Before(handoffDeadline); i++ {
		waiter := concurrency.NewMutex(sessions[(i+1)%2], name)
		done := make(chan error, 1)
		var got time.Time
		go func() {
			ctx, cancel := call()
			defer cancel()
			err := waiter.Lock(ctx)
			got = time.Now()
			done <- err
		}()
		// The waiter is queued once its key is there (two keys under the
		// name); it then reads the holder's key and watches it from that
		// read's revision. etcd moves a watcher that starts at a past
		// revision into its synced group within 100 ms; a lock held longer
		// than that (the usual case) hands over without that wait, so the
		// holder holds for settleMs before it unlocks (not measured).
		queued := false
		for t := time.Now(); time.Since(t) < 5*time.Second; {
			ctx, cancel := call()
			r, err := cliA.Get(ctx, name+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
			cancel()
			if err != nil {
				fail(fmt.Errorf("handoff: count waiters: %v", err))
			}
			if r.Count >= 2 {
				queued = true
				break
			}
			time.Sleep(time.Millisecond)
		}
		if !queued {
			fail(fmt.Errorf("handoff: the waiter was not queued in 5 s"))
		}
		time.Sleep(settleMs * time.Millisecond)
		ctx, cancel := call()
		t := time.Now()
		if err := holder.Unlock(ctx); err != nil {
			fail(fmt.Errorf("handoff: unlock: %v", err))
		}
		cancel()
		select {
		case err := <-done:
			if err != nil {
				fail(fmt.Errorf("handoff: waiter's lock: %v", err))
			}
		case <-time.After(10 * time.Second):
			fail(fmt.Errorf("handoff: the waiter's Lock did not return in 10 s"))
		}
		handoff = append(handoff, float64(got.Sub(t).Nanoseconds())/1e6)
		holder = waiter
	}
	{
		ctx, cancel := call()
		_ = holder.Unlock(ctx)
		cancel()
	}
	out, _ := json.Marshal(map[string]interface{}{"firstLock": summary(first), "veryFirstLock": veryFirst, "handoff": summary(handoff)})
	fmt.Println(string(out))
}
