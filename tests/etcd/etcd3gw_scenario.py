# The etcd3gw client (PyPI; it speaks etcd's JSON gateway) through one
# scenario against the server at argv[1]: each step's result printed as a
# JSON line, with what differs between two servers by nature (lease ids,
# cluster and member ids and names, ports, sizes) replaced by stable names.
# tests/etcd/etcd3gw.test.mjs runs it on a real etcd 3.4 and on edge-lease
# and compares the lines. Every wait is bounded.
import json
import sys
import threading
import time
from urllib.parse import urlparse

import etcd3gw
from etcd3gw import exceptions

url = urlparse(sys.argv[1])
client = etcd3gw.client(host=url.hostname, port=url.port, timeout=10)
aliases = {}


def alias(lease_id):
    key = str(lease_id)
    if key not in aliases:
        aliases[key] = f"<L{len(aliases)}>"
    return aliases[key]


def show(v):
    if isinstance(v, bytes):
        return v.decode("latin-1")
    if isinstance(v, dict):
        out = {}
        for k, x in v.items():
            if k in ("cluster_id", "member_id", "raft_term", "ID", "leader", "raftTerm", "raftIndex", "dbSize", "dbSizeInUse"):
                out[k] = "<n>"
            elif k == "lease" and str(x) != "0":
                out[k] = alias(x)
            elif k == "name":  # the member's: each side's own --name
                out[k] = "<name>"
            elif k in ("peerURLs", "clientURLs"):
                out[k] = [f"{urlparse(u).scheme}://{urlparse(u).hostname}:<port>" for u in x]
            else:
                out[k] = show(x)
        return out
    if isinstance(v, (list, tuple)):
        return [show(x) for x in v]
    return v


def step(name, fn):
    try:
        result = show(fn())
    except exceptions.Etcd3Exception as e:
        result = {"error": type(e).__name__, "detail": str(e.detail_text) if hasattr(e, "detail_text") else str(e)}
    print(json.dumps([name, result], sort_keys=True), flush=True)


def later(seconds, fn):
    t = threading.Timer(seconds, fn)
    t.start()
    return t


def collect(watch, n):
    """The first `n` events of `watch` (events, cancel), at most 5 s."""
    events, cancel = watch
    got = []
    timer = later(5, cancel)
    for event in events:
        got.append(event)
        if len(got) == n:
            break
    timer.cancel()
    cancel()
    return got


step("status keys", lambda: sorted(client.status().keys()))
step("members", lambda: client.members())
step("put a", lambda: client.put("a", "1"))
step("get a", lambda: client.get("a"))
step("get a with metadata", lambda: client.get("a", metadata=True))
step("get missing", lambda: client.get("missing"))
step("create a (exists)", lambda: client.create("a", "x"))
step("create b", lambda: client.create("b", "2"))
step("replace a 1 -> 3", lambda: client.replace("a", "1", "3"))
step("replace a 1 -> 4 (stale)", lambda: client.replace("a", "1", "4"))
for k, v in [("p/2", "two"), ("p/1", "one"), ("p/3", "three"), ("q", "other")]:
    client.put(k, v)
step("get_prefix p/", lambda: client.get_prefix("p/"))
step("get_prefix p/ descending by value", lambda: client.get_prefix("p/", sort_order="descend", sort_target="value"))
step("get_all", lambda: client.get_all())
step("delete q", lambda: client.delete("q"))
step("delete q again", lambda: client.delete("q"))
step("transaction", lambda: client.transaction({
    "compare": [{"key": etcd3gw.utils._encode("a"), "result": "EQUAL", "target": "VALUE", "value": etcd3gw.utils._encode("3")}],
    "success": [{"request_put": {"key": etcd3gw.utils._encode("t"), "value": etcd3gw.utils._encode("yes")}}, {"request_range": {"key": etcd3gw.utils._encode("p/"), "range_end": etcd3gw.utils._encode("p0")}}],
    "failure": [{"request_put": {"key": etcd3gw.utils._encode("t"), "value": etcd3gw.utils._encode("no")}}],
}))
step("transaction, a duplicate key", lambda: client.transaction({
    "success": [{"request_put": {"key": etcd3gw.utils._encode("d"), "value": ""}}, {"request_put": {"key": etcd3gw.utils._encode("d"), "value": ""}}],
}))

# Leases: keys attached, TTL, refresh (the keepalive stream, one answer),
# revoke, and what a revoked lease answers.
lease = client.lease(ttl=60)
alias(lease.id)
step("put with lease", lambda: client.put("l/1", "x", lease=lease))
step("put with lease 2", lambda: client.put("l/2", "y", lease=lease))
step("lease ttl in range", lambda: 55 <= lease.ttl() <= 60)
step("lease keys", lambda: sorted(lease.keys()))
step("lease refresh", lambda: lease.refresh())
step("lease revoke", lambda: lease.revoke())
step("keys after revoke", lambda: client.get_prefix("l/"))
step("revoked lease ttl", lambda: lease.ttl())
step("revoked lease refresh", lambda: lease.refresh())
step("revoked lease keys", lambda: lease.keys())
step("put with the revoked lease", lambda: client.put("l/3", "z", lease=lease))

# etcd3gw's lock recipe: a txn on create_revision with a lease.
lock = client.lock("job", ttl=60)
other = client.lock("job", ttl=60)
step("lock acquire", lambda: lock.acquire())
step("lock is_acquired", lambda: lock.is_acquired())
step("second lock acquire", lambda: other.acquire())
step("second lock is_acquired", lambda: other.is_acquired())
step("lock refresh", lambda: lock.refresh())
step("lock release", lambda: lock.release())
step("lock release again", lambda: lock.release())
step("second lock acquire after release", lambda: other.acquire())
step("second lock release", lambda: other.release())
lock.lease.revoke()
other.lease.revoke()

# Watch: one event, from a put made while it waits (from the next revision,
# so that it does not matter whether the watch or the put comes first);
# history from a revision.
def revision():
    return int(client.status()["header"]["revision"])


start = revision()
later(0.3, lambda: client.put("w", "live"))
step("watch_once w", lambda: client.watch_once("w", timeout=5, start_revision=start + 1))
client.put("w", "second")
client.delete("w")
history = collect(client.watch("w", start_revision=start + 1, prev_kv=True), 3)
step("watch w from history", lambda: history)
live = client.watch_prefix("p/", start_revision=revision() + 1)
later(0.3, lambda: (client.put("p/4", "four"), client.delete_prefix("p/")))
live = collect(live, 5)
step("watch_prefix p/ live", lambda: live)
step("watch_once times out", lambda: client.watch_once("nothing", timeout=0.5))
