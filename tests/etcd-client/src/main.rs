//! The etcd-client crate through one scenario against the server at
//! argv[1]: one line per step, with what differs between two servers by
//! nature (lease ids, also as hex in lock and election keys; cluster and
//! member ids and names; ports) replaced by stable names. Every wait is
//! bounded.

use std::collections::HashMap;
use std::fmt::Debug;
use std::time::Duration;

use etcd_client::{
    Client, Compare, CompareOp, DeleteOptions, Error, EventType, GetOptions, KeyValue,
    LeaseTimeToLiveOptions, LockOptions, ProclaimOptions, PutOptions, ResignOptions, SortOrder,
    SortTarget, Txn, TxnOp, TxnOpResponse, WatchOptions, WatchResponse,
};
use tokio::time::timeout;

const WAIT: Duration = Duration::from_secs(5);

/// Lease ids as they appear, in order: `<L0>`, `<L1>`...
#[derive(Default)]
struct Aliases(HashMap<i64, String>);

impl Aliases {
    fn lease(&mut self, id: i64) -> String {
        if id == 0 {
            return "0".into();
        }
        let n = self.0.len();
        self.0
            .entry(id)
            .or_insert_with(|| format!("<L{n}>"))
            .clone()
    }

    /// `s` with every known lease id in hex (lock and election keys) named.
    fn text(&self, bytes: &[u8]) -> String {
        let mut s = String::from_utf8_lossy(bytes).into_owned();
        for (id, name) in &self.0 {
            s = s.replace(&format!("{id:x}"), name);
        }
        s
    }

    fn kv(&mut self, kv: &KeyValue) -> String {
        let lease = self.lease(kv.lease());
        format!(
            "{}={} c{} m{} v{} l{}",
            self.text(kv.key()),
            self.text(kv.value()),
            kv.create_revision(),
            kv.mod_revision(),
            kv.version(),
            lease
        )
    }

    fn kvs(&mut self, kvs: &[KeyValue]) -> String {
        let all: Vec<String> = kvs.iter().map(|kv| self.kv(kv)).collect();
        format!("[{}]", all.join(", "))
    }

    fn watch(&mut self, r: &WatchResponse) -> String {
        let events: Vec<String> = r
            .events()
            .iter()
            .map(|e| {
                let kind = match e.event_type() {
                    EventType::Put => "PUT",
                    EventType::Delete => "DELETE",
                };
                let kv = e.kv().map(|kv| self.kv(kv)).unwrap_or_default();
                let prev = e.prev_kv().map(|kv| self.kv(kv)).unwrap_or_default();
                format!("{kind} {kv} prev[{prev}]")
            })
            .collect();
        format!(
            "id {} rev {} created {} canceled {} compact {} reason {:?} events [{}]",
            r.watch_id(),
            r.header().map_or(0, |h| h.revision()),
            r.created(),
            r.canceled(),
            r.compact_revision(),
            r.cancel_reason(),
            events.join(", ")
        )
    }
}

/// An error as code and message (what clients match on).
fn error(e: &Error) -> String {
    match e {
        Error::GRpcStatus(s) => format!("error {:?} {:?}", s.code(), s.message()),
        other => format!("error {other}"),
    }
}

/// A call expected to fail: its error, or nothing if it did not.
fn refused<T>(r: Result<T, Error>) -> String {
    r.map(|_| String::new()).unwrap_or_else(|e| error(&e))
}

fn show<T: Debug>(name: &str, v: T) {
    println!("{name}\t{v:?}");
}

fn line(name: &str, v: String) {
    println!("{name}\t{v}");
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    let url = std::env::args().nth(1).expect("the server's URL");
    let mut c = Client::connect([url.as_str()], None).await?;
    let mut a = Aliases::default();

    // Maintenance and cluster.
    let st = c.status().await?;
    show("status version", &st.version()[..4]);
    show("status db size > 0", st.db_size() > 0);
    show(
        "status leader is the member",
        st.header().map(|h| h.member_id()) == Some(st.leader()),
    );
    let members = c.member_list().await?;
    show("members", members.members().len());
    show(
        "member urls",
        members
            .members()
            .iter()
            .map(|m| m.client_urls().len())
            .collect::<Vec<_>>(),
    );

    // KV.
    for (k, v) in [
        ("a", "1"),
        ("p/2", "two"),
        ("p/1", "one"),
        ("p/3", "three"),
        ("q", "x"),
    ] {
        c.put(k, v, None).await?;
    }
    let r = c
        .put("a", "2", Some(PutOptions::new().with_prev_key()))
        .await?;
    line(
        "put a with prev",
        format!(
            "rev {} prev {:?}",
            r.header().unwrap().revision(),
            r.prev_key().map(|kv| a.kv(kv))
        ),
    );
    let r = c.get("a", None).await?;
    line("get a", a.kvs(r.kvs()));
    let r = c
        .get(
            "p/",
            Some(
                GetOptions::new()
                    .with_prefix()
                    .with_sort(SortTarget::Value, SortOrder::Descend)
                    .with_limit(2),
            ),
        )
        .await?;
    line(
        "get p/ by value desc, limit 2",
        format!("{} count {} more {}", a.kvs(r.kvs()), r.count(), r.more()),
    );
    let r = c
        .get(
            "p/",
            Some(
                GetOptions::new()
                    .with_prefix()
                    .with_keys_only()
                    .with_revision(3),
            ),
        )
        .await?;
    line("get p/ keys only at rev 3", a.kvs(r.kvs()));
    let r = c
        .get(
            "",
            Some(GetOptions::new().with_all_keys().with_count_only()),
        )
        .await?;
    line(
        "count all",
        format!("count {} kvs {}", r.count(), r.kvs().len()),
    );
    line(
        "get at a future revision",
        refused(c.get("a", Some(GetOptions::new().with_revision(100))).await),
    );
    let r = c
        .delete(
            "p/",
            Some(DeleteOptions::new().with_prefix().with_prev_key()),
        )
        .await?;
    line(
        "delete p/ with prev",
        format!("deleted {} prev {}", r.deleted(), a.kvs(r.prev_kvs())),
    );

    // Txn: compares, both branches, ops of each kind, errors.
    let txn = Txn::new()
        .when([
            Compare::value("a", CompareOp::Equal, "2"),
            Compare::version("q", CompareOp::Greater, 0),
        ])
        .and_then([
            TxnOp::put("t", "yes", None),
            TxnOp::get("a", None),
            TxnOp::delete("q", Some(DeleteOptions::new().with_prev_key())),
        ])
        .or_else([TxnOp::put("t", "no", None)]);
    let r = c.txn(txn).await?;
    let ops: Vec<String> = r
        .op_responses()
        .iter()
        .map(|op| match op {
            TxnOpResponse::Put(p) => format!("put rev {}", p.header().unwrap().revision()),
            TxnOpResponse::Get(g) => format!("get {}", a.kvs(g.kvs())),
            TxnOpResponse::Delete(d) => format!("delete {} {}", d.deleted(), a.kvs(d.prev_kvs())),
            TxnOpResponse::Txn(t) => format!("txn {}", t.succeeded()),
        })
        .collect();
    line("txn", format!("succeeded {} {:?}", r.succeeded(), ops));
    let r = c
        .txn(
            Txn::new()
                .when([Compare::create_revision("a", CompareOp::Less, 1)])
                .and_then([TxnOp::put("t", "never", None)])
                .or_else([TxnOp::get("t", None)]),
        )
        .await?;
    line(
        "txn, failure branch",
        format!("succeeded {} ops {}", r.succeeded(), r.op_responses().len()),
    );
    let dup = Txn::new().and_then([TxnOp::put("d", "1", None), TxnOp::put("d", "2", None)]);
    line("txn, a duplicate key", refused(c.txn(dup).await));

    // Leases: keys attached, keepalive, time to live, leases, revoke.
    let lease = c.lease_grant(60, None).await?;
    line(
        "lease grant",
        format!("{} ttl {}", a.lease(lease.id()), lease.ttl()),
    );
    c.put("l/1", "x", Some(PutOptions::new().with_lease(lease.id())))
        .await?;
    c.put("l/2", "y", Some(PutOptions::new().with_lease(lease.id())))
        .await?;
    let (mut keeper, mut replies) = c.lease_keep_alive(lease.id()).await?;
    keeper.keep_alive().await?;
    let reply = timeout(WAIT, replies.message())
        .await
        .expect("a keepalive answer")?;
    line(
        "keepalive",
        reply
            .map(|r| format!("{} ttl {}", a.lease(r.id()), r.ttl()))
            .unwrap_or_default(),
    );
    let ttl = c
        .lease_time_to_live(lease.id(), Some(LeaseTimeToLiveOptions::new().with_keys()))
        .await?;
    // (etcd lists a lease's keys in Go map order: sorted here.)
    let mut keys: Vec<String> = ttl.keys().iter().map(|k| a.text(k)).collect();
    keys.sort();
    line(
        "time to live",
        format!(
            "granted {} ttl ok {} keys {:?}",
            ttl.granted_ttl(),
            (55..=60).contains(&ttl.ttl()),
            keys
        ),
    );
    let leases = c.leases().await?;
    line(
        "leases",
        format!(
            "{:?}",
            leases
                .leases()
                .iter()
                .map(|l| a.lease(l.id()))
                .collect::<Vec<_>>()
        ),
    );
    c.lease_revoke(lease.id()).await?;
    line(
        "keys after revoke",
        a.kvs(
            c.get("l/", Some(GetOptions::new().with_prefix()))
                .await?
                .kvs(),
        ),
    );
    keeper.keep_alive().await?;
    let reply = timeout(WAIT, replies.message())
        .await
        .expect("a keepalive answer")?;
    line(
        "keepalive of the revoked lease",
        reply
            .map(|r| format!("ttl {}", r.ttl()))
            .unwrap_or_default(),
    );
    line("revoke again", refused(c.lease_revoke(lease.id()).await));
    line(
        "put with the revoked lease",
        refused(
            c.put("l/3", "z", Some(PutOptions::new().with_lease(lease.id())))
                .await,
        ),
    );

    // Lock (v3lock): a second holder waits until the first unlocks.
    let l1 = c.lease_grant(60, None).await?.id();
    let l2 = c.lease_grant(60, None).await?.id();
    a.lease(l1);
    a.lease(l2);
    let first = c
        .lock("job", Some(LockOptions::new().with_lease(l1)))
        .await?;
    line("lock", a.text(first.key()));
    let mut other = c.clone();
    let second = tokio::spawn(async move {
        other
            .lock("job", Some(LockOptions::new().with_lease(l2)))
            .await
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    line("second waits", format!("{}", !second.is_finished()));
    c.unlock(first.key()).await?;
    let got = timeout(WAIT, second)
        .await
        .expect("the second lock")
        .expect("the task")?;
    line("second locks after unlock", a.text(got.key()));
    line(
        "lock with an unknown lease",
        refused(
            c.lock("job2", Some(LockOptions::new().with_lease(12345)))
                .await,
        ),
    );

    // Election: campaign, leader, proclaim, observe, resign.
    let won = c.campaign("vote", "one", l1).await?;
    let leader = won.leader().cloned().expect("a leader key");
    line(
        "campaign",
        format!("{} lease {}", a.text(leader.key()), a.lease(leader.lease())),
    );
    let mut observe = c.observe("vote").await?;
    let seen = timeout(WAIT, observe.message())
        .await
        .expect("an observed leader")?;
    line(
        "observe",
        seen.and_then(|r| r.kv().map(|kv| a.kv(kv)))
            .unwrap_or_default(),
    );
    c.proclaim(
        "uno",
        Some(ProclaimOptions::new().with_leader(leader.clone())),
    )
    .await?;
    let seen = timeout(WAIT, observe.message())
        .await
        .expect("an observed proclaim")?;
    line(
        "observe after proclaim",
        seen.and_then(|r| r.kv().map(|kv| a.kv(kv)))
            .unwrap_or_default(),
    );
    let now = c.leader("vote").await?;
    line("leader", now.kv().map(|kv| a.kv(kv)).unwrap_or_default());
    c.resign(Some(ResignOptions::new().with_leader(leader)))
        .await?;
    line(
        "leader after resign",
        c.leader("vote")
            .await
            .map(|r| format!("{:?}", r.kv().map(|kv| a.kv(kv))))
            .unwrap_or_else(|e| error(&e)),
    );

    // Watch: history with prev kvs, live events, cancel, compaction.
    let from = c.put("w", "1", None).await?.header().unwrap().revision();
    c.put("w", "2", None).await?;
    c.delete("w", None).await?;
    let mut w = c
        .watch(
            "w",
            Some(
                WatchOptions::new()
                    .with_start_revision(from)
                    .with_prev_key(),
            ),
        )
        .await?;
    let mut got = Vec::new();
    while got
        .iter()
        .map(|r: &WatchResponse| r.events().len())
        .sum::<usize>()
        < 3
    {
        match timeout(WAIT, w.message()).await.expect("watch history")? {
            Some(r) => got.push(r),
            None => break,
        }
    }
    for r in &got {
        let s = a.watch(r);
        line("watch from history", s);
    }
    w.watch("live/", Some(WatchOptions::new().with_prefix()))
        .await?;
    let created = timeout(WAIT, w.message())
        .await
        .expect("the second watcher")?
        .expect("a response");
    line("second watcher", a.watch(&created));
    c.put("live/x", "1", None).await?;
    let r = timeout(WAIT, w.message())
        .await
        .expect("a live event")?
        .expect("a response");
    line("live event", a.watch(&r));
    w.cancel(created.watch_id()).await?;
    let r = timeout(WAIT, w.message())
        .await
        .expect("the cancel")?
        .expect("a response");
    line("cancel", a.watch(&r));
    let rev = c.put("c", "1", None).await?.header().unwrap().revision();
    c.compact(rev, None).await?;
    w.watch("w", Some(WatchOptions::new().with_start_revision(from)))
        .await?;
    for _ in 0..2 {
        let r = timeout(WAIT, w.message())
            .await
            .expect("a compacted watcher")?
            .expect("a response");
        line("watch from a compacted revision", a.watch(&r));
    }
    line(
        "get at a compacted revision",
        refused(
            c.get("a", Some(GetOptions::new().with_revision(from)))
                .await,
        ),
    );
    line("compact again", refused(c.compact(rev, None).await));
    Ok(())
}
