// isowner runs the guarded-write story with etcd's own Go client (clientv3
// and concurrency 3.4) against one endpoint and prints its transcript as
// JSON: a holder's txn guarded by Mutex.IsOwner() before and after its lease
// is revoked behind its back, and the next holder's. Revisions are relative
// to the first read; lease ids become L1/L2, so transcripts from different
// servers compare equal when the servers behave alike.
//
// Usage: isowner <endpoint> <prefix>
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"go.etcd.io/etcd/clientv3"
	"go.etcd.io/etcd/clientv3/concurrency"
)

type kv struct {
	Key            string `json:"key"`
	Value          string `json:"value"`
	CreateRevision int64  `json:"createRevision"`
	ModRevision    int64  `json:"modRevision"`
	Version        int64  `json:"version"`
	Lease          string `json:"lease"`
}

type op struct {
	Kind string `json:"kind"`
	// A put's own header revision, as the server sent it (etcd leaves nested headers' revision at 0).
	NestedRevision *int64 `json:"nestedRevision,omitempty"`
	Count          *int64 `json:"count,omitempty"`
	More           *bool  `json:"more,omitempty"`
	Kvs            []kv   `json:"kvs,omitempty"`
}

type txn struct {
	Step      string `json:"step"`
	Succeeded bool   `json:"succeeded"`
	Revision  int64  `json:"revision"`
	Responses []op   `json:"responses"`
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "isowner:", err)
	os.Exit(1)
}

func main() {
	if len(os.Args) != 3 {
		fail(fmt.Errorf("usage: isowner <endpoint> <prefix>"))
	}
	endpoint, pfx := os.Args[1], os.Args[2]
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second})
	if err != nil {
		fail(err)
	}
	defer cli.Close()

	first, err := cli.Get(ctx, pfx+"probe")
	if err != nil {
		fail(err)
	}
	base := first.Header.Revision
	leases := map[int64]string{}
	rel := func(r int64) int64 {
		if r == 0 {
			return 0
		}
		return r - base
	}
	name := func(s string) string {
		for id, l := range leases {
			s = strings.ReplaceAll(s, fmt.Sprintf("%x", id), l)
		}
		return s
	}
	record := func(step string, r *clientv3.TxnResponse) txn {
		t := txn{Step: step, Succeeded: r.Succeeded, Revision: rel(r.Header.Revision), Responses: []op{}}
		for _, resp := range r.Responses {
			if p := resp.GetResponsePut(); p != nil {
				rev := p.Header.GetRevision()
				t.Responses = append(t.Responses, op{Kind: "put", NestedRevision: &rev})
			} else if g := resp.GetResponseRange(); g != nil {
				o := op{Kind: "range", Count: &g.Count, More: &g.More, Kvs: []kv{}}
				for _, x := range g.Kvs {
					o.Kvs = append(o.Kvs, kv{name(string(x.Key)), string(x.Value), rel(x.CreateRevision), rel(x.ModRevision), x.Version, leases[x.Lease]})
				}
				t.Responses = append(t.Responses, o)
			} else {
				t.Responses = append(t.Responses, op{Kind: "other"})
			}
		}
		return t
	}
	owner := clientv3.OpGet(pfx+"lock/", clientv3.WithFirstCreate()...)
	guarded := func(step string, m *concurrency.Mutex, value string) txn {
		r, err := cli.Txn(ctx).If(m.IsOwner()).Then(clientv3.OpPut(pfx+"out", value)).Else(owner).Commit()
		if err != nil {
			fail(err)
		}
		return record(step, r)
	}
	lock := func(l string) (*concurrency.Session, *concurrency.Mutex) {
		s, err := concurrency.NewSession(cli, concurrency.WithTTL(30))
		if err != nil {
			fail(err)
		}
		leases[int64(s.Lease())] = l
		m := concurrency.NewMutex(s, pfx+"lock")
		if err := m.Lock(ctx); err != nil {
			fail(err)
		}
		return s, m
	}

	out := []txn{}
	s1, m1 := lock("L1")
	out = append(out, guarded("holder", m1, "one"))
	// The lease ends behind the holder's back; its session does not know yet.
	if _, err := cli.Revoke(ctx, s1.Lease()); err != nil {
		fail(err)
	}
	s2, m2 := lock("L2")
	defer s2.Close()
	out = append(out, guarded("stale holder", m1, "stale"))
	out = append(out, guarded("new holder", m2, "two"))
	got, err := cli.Get(ctx, pfx+"out")
	if err != nil {
		fail(err)
	}
	final := []kv{}
	for _, x := range got.Kvs {
		final = append(final, kv{string(x.Key), string(x.Value), rel(x.CreateRevision), rel(x.ModRevision), x.Version, leases[x.Lease]})
	}
	if err := json.NewEncoder(os.Stdout).Encode(map[string]interface{}{"txns": out, "out": final}); err != nil {
		fail(err)
	}
}
