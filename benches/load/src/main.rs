//! The server benchmark's load generator: benches/server.mjs runs it once per
//! case against edge-lease's server and against etcd, and reads one JSON line.
//!
//!   edge-lease-load <host:port> <case> <clients> <max ops> <max ms>
//!
//! Cases: grant+put, keepalive, range, lock, put:K (sustained puts of an
//! 8-byte value, operation k on key `k/<k mod K>` zero-padded: K = 1 is one
//! hot key, K >= max ops a new key each time), watch (100 watch streams on one
//! key over `clients` connections, one writer; watch:N with N puts in
//! flight), echo: no HTTP/2, each
//! client writes ECHO_BYTES on its own TCP connection and waits for as many
//! back (the socket floor, against benches/socket-floor.mjs), and fanout:
//! the watch case's floor in raw TCP (against benches/fanout-floor.mjs). Each client has its own
//! HTTP/2 connection; all run on one thread, so the generator takes at most
//! one of the machine's cores. Every call carries grpc-timeout and a local
//! timeout of 10 s; every case stops at `max ops` or `max ms`.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use h2::client::SendRequest;
use h2::{RecvStream, SendStream};
use prost::Message;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;
use std::time::{Duration, Instant};
use tokio::net::TcpStream;
use tokio::sync::Notify;
use tokio::time::timeout;

type Error = Box<dyn std::error::Error>;
type Result<T> = std::result::Result<T, Error>;

const CALL_TIMEOUT: Duration = Duration::from_secs(10);
const WATCHERS: usize = 100;

/// The few etcd messages the cases use, fields numbered as in rpc.proto.
mod pb {
    use prost::Message;

    #[derive(Clone, PartialEq, Message)]
    pub struct Header {
        #[prost(int64, tag = "3")]
        pub revision: i64,
    }
    #[derive(Clone, PartialEq, Message)]
    pub struct RangeRequest {
        #[prost(bytes = "vec", tag = "1")]
        pub key: Vec<u8>,
    }
    #[derive(Clone, PartialEq, Message)]
    pub struct RangeResponse {
        #[prost(int64, tag = "4")]
        pub count: i64,
    }
    #[derive(Clone, PartialEq, Message)]
    pub struct PutRequest {
        #[prost(bytes = "vec", tag = "1")]
        pub key: Vec<u8>,
        #[prost(bytes = "vec", tag = "2")]
        pub value: Vec<u8>,
        #[prost(int64, tag = "3")]
        pub lease: i64,
    }
    #[derive(Clone, PartialEq, Message)]
    pub struct PutResponse {
        #[prost(message, optional, tag = "1")]
        pub header: Option<Header>,
    }
    #[derive(Clone, PartialEq, Message)]
    pub struct LeaseGrantRequest {
        #[prost(int64, tag = "1")]
        pub ttl: i64,
    }
    #[derive(Clone, PartialEq, Message)]
    pub struct LeaseGrantResponse {
        #[prost(int64, tag = "2")]
        pub id: i64,
    }
    #[derive(Clone, PartialEq, Message)]
    pub struct LeaseKeepAliveRequest {
        #[prost(int64, tag = "1")]
        pub id: i64,
    }
    #[derive(Clone, PartialEq, Message)]
    pub struct LeaseKeepAliveResponse {
        #[prost(int64, tag = "3")]
        pub ttl: i64,
    }
    #[derive(Clone, PartialEq, Message)]
    pub struct LockRequest {
        #[prost(bytes = "vec", tag = "1")]
        pub name: Vec<u8>,
        #[prost(int64, tag = "2")]
        pub lease: i64,
    }
    #[derive(Clone, PartialEq, Message)]
    pub struct LockResponse {
        #[prost(bytes = "vec", tag = "2")]
        pub key: Vec<u8>,
    }
    #[derive(Clone, PartialEq, Message)]
    pub struct UnlockRequest {
        #[prost(bytes = "vec", tag = "1")]
        pub key: Vec<u8>,
    }
    #[derive(Clone, PartialEq, Message)]
    pub struct Empty {}
    #[derive(Clone, PartialEq, Message)]
    pub struct WatchCreateRequest {
        #[prost(bytes = "vec", tag = "1")]
        pub key: Vec<u8>,
    }
    #[derive(Clone, PartialEq, Message)]
    pub struct WatchRequest {
        #[prost(message, optional, tag = "1")]
        pub create_request: Option<WatchCreateRequest>,
    }
    #[derive(Clone, PartialEq, Message)]
    pub struct KeyValue {
        #[prost(int64, tag = "3")]
        pub mod_revision: i64,
    }
    #[derive(Clone, PartialEq, Message)]
    pub struct Event {
        #[prost(message, optional, tag = "2")]
        pub kv: Option<KeyValue>,
    }
    #[derive(Clone, PartialEq, Message)]
    pub struct WatchResponse {
        #[prost(bool, tag = "3")]
        pub created: bool,
        #[prost(message, repeated, tag = "11")]
        pub events: Vec<Event>,
    }
}

/// One client: one HTTP/2 connection.
#[derive(Clone)]
struct Client {
    h2: SendRequest<Bytes>,
    authority: Rc<str>,
}

impl Client {
    async fn connect(addr: &str) -> Result<Client> {
        let tcp = TcpStream::connect(addr).await?;
        tcp.set_nodelay(true)?;
        let (h2, conn) = h2::client::handshake(tcp).await?;
        tokio::task::spawn_local(async move {
            let _ = conn.await;
        });
        Ok(Client {
            h2,
            authority: addr.into(),
        })
    }

    async fn open(&self, path: &str) -> Result<(h2::client::ResponseFuture, SendStream<Bytes>)> {
        let req = http::Request::builder()
            .method("POST")
            .uri(format!("http://{}{path}", self.authority))
            .header("content-type", "application/grpc")
            .header("te", "trailers")
            .header("grpc-timeout", "10S")
            .body(())?;
        let mut h2 = self.h2.clone().ready().await?;
        Ok(h2.send_request(req, false)?)
    }

    async fn unary<Res: Message + Default>(&self, path: &str, req: &impl Message) -> Result<Res> {
        timeout(CALL_TIMEOUT, async {
            let (res, mut send) = self.open(path).await?;
            send.send_data(frame(req), true)?;
            let (parts, body) = res.await?.into_parts();
            let mut reader = Reader::new(body);
            let msg = reader.next().await?;
            let trailers = reader.body.as_mut().ok_or("no body")?.trailers().await?;
            let status = trailers
                .as_ref()
                .unwrap_or(&parts.headers)
                .get("grpc-status")
                .map(|v| v.as_bytes().to_vec());
            if status.as_deref() != Some(b"0") {
                return Err(format!("{path}: grpc-status {status:?}").into());
            }
            let msg = msg.ok_or_else(|| format!("{path}: no message"))?;
            Ok(Res::decode(msg)?)
        })
        .await
        .map_err(|_| format!("{path}: no answer in 10 s"))?
    }

    /// A bidirectional stream: its sender and a reader of its messages
    /// (servers send the response headers with the first message).
    async fn stream(&self, path: &str) -> Result<(SendStream<Bytes>, Reader)> {
        let (res, send) = self.open(path).await?;
        Ok((send, Reader::pending(res)))
    }
}

fn frame(msg: &impl Message) -> Bytes {
    let mut b = BytesMut::with_capacity(5 + msg.encoded_len());
    b.put_u8(0);
    b.put_u32(msg.encoded_len() as u32);
    msg.encode(&mut b).expect("room reserved");
    b.freeze()
}

/// gRPC messages out of a response body.
struct Reader {
    headers: Option<h2::client::ResponseFuture>,
    body: Option<RecvStream>,
    buf: BytesMut,
}

impl Reader {
    fn new(body: RecvStream) -> Reader {
        Reader {
            headers: None,
            body: Some(body),
            buf: BytesMut::new(),
        }
    }

    fn pending(headers: h2::client::ResponseFuture) -> Reader {
        Reader {
            headers: Some(headers),
            body: None,
            buf: BytesMut::new(),
        }
    }

    async fn next(&mut self) -> Result<Option<Bytes>> {
        loop {
            if self.buf.len() >= 5 {
                let len = u32::from_be_bytes([self.buf[1], self.buf[2], self.buf[3], self.buf[4]])
                    as usize;
                if self.buf.len() >= 5 + len {
                    self.buf.advance(5);
                    return Ok(Some(self.buf.split_to(len).freeze()));
                }
            }
            if let Some(headers) = self.headers.take() {
                self.body = Some(headers.await?.into_body());
            }
            let body = self.body.as_mut().ok_or("no body")?;
            match body.data().await {
                Some(chunk) => {
                    let chunk = chunk?;
                    let _ = body.flow_control().release_capacity(chunk.len());
                    self.buf.extend_from_slice(&chunk);
                }
                None => return Ok(None),
            }
        }
    }
}

const KV_RANGE: &str = "/etcdserverpb.KV/Range";
const KV_PUT: &str = "/etcdserverpb.KV/Put";
const LEASE_GRANT: &str = "/etcdserverpb.Lease/LeaseGrant";
const LEASE_KEEPALIVE: &str = "/etcdserverpb.Lease/LeaseKeepAlive";
const LOCK: &str = "/v3lockpb.Lock/Lock";
const UNLOCK: &str = "/v3lockpb.Lock/Unlock";
const WATCH: &str = "/etcdserverpb.Watch/Watch";

async fn grant(c: &Client) -> Result<i64> {
    Ok(
        c.unary::<pb::LeaseGrantResponse>(LEASE_GRANT, &pb::LeaseGrantRequest { ttl: 60 })
            .await?
            .id,
    )
}

/// What a client keeps between operations.
enum State {
    Plain(Client),
    Range(Client, Vec<u8>),
    KeepAlive(SendStream<Bytes>, Reader, i64),
    Lock(Client, i64),
    Put(Client, usize),
}

async fn setup(case: &str, c: Client, i: usize) -> Result<State> {
    Ok(match case {
        "grant+put" => State::Plain(c),
        "range" => {
            let key = format!("r/{i}").into_bytes();
            c.unary::<pb::PutResponse>(
                KV_PUT,
                &pb::PutRequest {
                    key: key.clone(),
                    value: vec![b'x'; 64],
                    lease: 0,
                },
            )
            .await?;
            State::Range(c, key)
        }
        "keepalive" => {
            let id = grant(&c).await?;
            let (send, reader) = c.stream(LEASE_KEEPALIVE).await?;
            State::KeepAlive(send, reader, id)
        }
        "lock" => {
            let lease = grant(&c).await?;
            State::Lock(c, lease)
        }
        _ => match case.strip_prefix("put:").map(str::parse::<usize>) {
            Some(Ok(keys)) if keys > 0 => State::Put(c, keys),
            _ => return Err(format!("unknown case {case}").into()),
        },
    })
}

async fn op(s: &mut State, k: usize) -> Result<()> {
    match s {
        State::Plain(c) => {
            let lease = grant(c).await?;
            let put = pb::PutRequest {
                key: format!("svc/{k}").into_bytes(),
                value: b"alive".to_vec(),
                lease,
            };
            c.unary::<pb::PutResponse>(KV_PUT, &put).await?;
        }
        State::Range(c, key) => {
            let r = c
                .unary::<pb::RangeResponse>(KV_RANGE, &pb::RangeRequest { key: key.clone() })
                .await?;
            if r.count != 1 {
                return Err("range: the key is missing".into());
            }
        }
        State::KeepAlive(send, reader, id) => {
            send.send_data(frame(&pb::LeaseKeepAliveRequest { id: *id }), false)?;
            let msg = timeout(CALL_TIMEOUT, reader.next())
                .await
                .map_err(|_| "keepalive: no answer in 10 s")??;
            let res =
                pb::LeaseKeepAliveResponse::decode(msg.ok_or("keepalive: the stream ended")?)?;
            if res.ttl <= 0 {
                return Err("keepalive: the lease is gone".into());
            }
        }
        State::Lock(c, lease) => {
            let r = c
                .unary::<pb::LockResponse>(
                    LOCK,
                    &pb::LockRequest {
                        name: b"bench-lock".to_vec(),
                        lease: *lease,
                    },
                )
                .await?;
            c.unary::<pb::Empty>(UNLOCK, &pb::UnlockRequest { key: r.key })
                .await?;
        }
        State::Put(c, keys) => {
            let put = pb::PutRequest {
                key: format!("k/{:08}", k % *keys).into_bytes(),
                value: b"vvvvvvvv".to_vec(),
                lease: 0,
            };
            c.unary::<pb::PutResponse>(KV_PUT, &put).await?;
        }
    }
    Ok(())
}

struct Report {
    ops: usize,
    secs: f64,
    lat_ms: Vec<f64>,
    /// Per operation (same order as `lat_ms`, when kept): its start in ms
    /// after `t0_unix_ms`, so a stall can be placed in time beside what the
    /// server did then (benches/server-workloads.mjs: its compactions).
    starts_ms: Vec<f64>,
    t0_unix_ms: f64,
}

fn unix_ms() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64() * 1e3)
}

/// `clients` clients run `case` until `max_ops` operations or `max_ms`.
async fn run(clients: &[Client], case: &str, max_ops: usize, max_ms: u64) -> Result<Report> {
    let mut states = Vec::new();
    for (i, c) in clients.iter().enumerate() {
        states.push(setup(case, c.clone(), i).await?);
    }
    let next = Rc::new(Cell::new(0usize));
    let lat = Rc::new(RefCell::new(Vec::with_capacity(max_ops)));
    let t0_unix_ms = unix_ms();
    let t0 = Instant::now();
    let deadline = t0 + Duration::from_millis(max_ms);
    let mut tasks = Vec::new();
    for mut s in states {
        let (next, lat, case) = (next.clone(), lat.clone(), case.to_string());
        tasks.push(tokio::task::spawn_local(async move {
            loop {
                let k = next.get();
                if k >= max_ops || Instant::now() > deadline {
                    break;
                }
                next.set(k + 1);
                let a = Instant::now();
                op(&mut s, k).await.map_err(|e| format!("{case}: {e}"))?;
                let start = (a - t0).as_secs_f64() * 1e3;
                lat.borrow_mut()
                    .push((start, a.elapsed().as_secs_f64() * 1e3));
            }
            if let State::KeepAlive(mut send, _, _) = s {
                let _ = send.send_data(Bytes::new(), true);
            }
            Ok::<(), String>(())
        }));
    }
    for t in tasks {
        t.await??;
    }
    let secs = t0.elapsed().as_secs_f64();
    let timed = std::mem::take(&mut *lat.borrow_mut());
    Ok(Report {
        ops: timed.len(),
        secs,
        lat_ms: timed.iter().map(|t| t.1).collect(),
        starts_ms: timed.iter().map(|t| t.0).collect(),
        t0_unix_ms,
    })
}

/// One writer, WATCHERS streams on one key spread over the clients'
/// connections: per put, the time until every watcher has its event.
/// Counted in events delivered. The writer keeps `window` puts in flight on
/// its connection (1: each waits for the last's deliveries).
async fn watch(clients: &[Client], max_puts: usize, max_ms: u64, window: usize) -> Result<Report> {
    let arrived: Rc<RefCell<HashMap<i64, usize>>> = Rc::default();
    let notify = Rc::new(Notify::new());
    let created = Rc::new(Cell::new(0usize));
    let mut tasks = Vec::new();
    for i in 0..WATCHERS {
        let c = &clients[i % clients.len()];
        let (mut send, mut reader) = c.stream(WATCH).await?;
        let create = pb::WatchRequest {
            create_request: Some(pb::WatchCreateRequest {
                key: b"fan".to_vec(),
            }),
        };
        send.send_data(frame(&create), false)?;
        let (arrived, notify, created) = (arrived.clone(), notify.clone(), created.clone());
        tasks.push(tokio::task::spawn_local(async move {
            let _keep = send;
            while let Ok(Some(msg)) = reader.next().await {
                let Ok(res) = pb::WatchResponse::decode(msg) else {
                    break;
                };
                if res.created {
                    created.set(created.get() + 1);
                }
                for ev in res.events {
                    *arrived
                        .borrow_mut()
                        .entry(ev.kv.map_or(0, |kv| kv.mod_revision))
                        .or_default() += 1;
                }
                notify.notify_waiters();
            }
        }));
    }
    let all_created = async {
        while created.get() < WATCHERS {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    timeout(CALL_TIMEOUT, all_created)
        .await
        .map_err(|_| "watch: not all created in 10 s")?;
    let next = Rc::new(Cell::new(0usize));
    let lat = Rc::new(RefCell::new(Vec::with_capacity(max_puts)));
    let t0 = Instant::now();
    let deadline = t0 + Duration::from_millis(max_ms);
    let mut writers = Vec::new();
    for _ in 0..window.max(1) {
        let writer = clients[0].clone();
        let (arrived, notify, next, lat) =
            (arrived.clone(), notify.clone(), next.clone(), lat.clone());
        writers.push(tokio::task::spawn_local(async move {
            loop {
                let k = next.get();
                if k >= max_puts || Instant::now() > deadline {
                    return Ok::<(), String>(());
                }
                next.set(k + 1);
                let a = Instant::now();
                let put = pb::PutRequest {
                    key: b"fan".to_vec(),
                    value: k.to_string().into_bytes(),
                    lease: 0,
                };
                let rev = writer
                    .unary::<pb::PutResponse>(KV_PUT, &put)
                    .await
                    .map_err(|e| format!("watch: {e}"))?
                    .header
                    .map_or(0, |h| h.revision);
                let all = async {
                    loop {
                        let wait = notify.notified();
                        if arrived.borrow().get(&rev).copied().unwrap_or(0) >= WATCHERS {
                            return;
                        }
                        wait.await;
                    }
                };
                timeout(Duration::from_secs(2), all)
                    .await
                    .map_err(|_| format!("watch: revision {rev} not delivered to all in 2 s"))?;
                arrived.borrow_mut().remove(&rev);
                lat.borrow_mut().push(a.elapsed().as_secs_f64() * 1e3);
            }
        }));
    }
    for w in writers {
        w.await??;
    }
    let secs = t0.elapsed().as_secs_f64();
    let lat_ms = std::mem::take(&mut *lat.borrow_mut());
    for t in tasks {
        t.abort();
    }
    Ok(Report {
        ops: lat_ms.len() * WATCHERS,
        secs,
        lat_ms,
        starts_ms: Vec::new(),
        t0_unix_ms: 0.0,
    })
}

/// About a range call's request and answer on the wire.
const ECHO_BYTES: usize = 96;

/// `clients` raw TCP connections, each writing ECHO_BYTES and reading as many
/// back, until `max_ops` exchanges or `max_ms`.
async fn echo(addr: &str, clients: usize, max_ops: usize, max_ms: u64) -> Result<Report> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut socks = Vec::new();
    for _ in 0..clients {
        let s = TcpStream::connect(addr).await?;
        s.set_nodelay(true)?;
        socks.push(s);
    }
    let next = Rc::new(Cell::new(0usize));
    let lat = Rc::new(RefCell::new(Vec::with_capacity(max_ops)));
    let t0 = Instant::now();
    let deadline = t0 + Duration::from_millis(max_ms);
    let mut tasks = Vec::new();
    for mut s in socks {
        let (next, lat) = (next.clone(), lat.clone());
        tasks.push(tokio::task::spawn_local(async move {
            let out = [7u8; ECHO_BYTES];
            let mut back = [0u8; ECHO_BYTES];
            loop {
                let k = next.get();
                if k >= max_ops || Instant::now() > deadline {
                    break;
                }
                next.set(k + 1);
                let a = Instant::now();
                s.write_all(&out).await.map_err(|e| e.to_string())?;
                timeout(CALL_TIMEOUT, s.read_exact(&mut back))
                    .await
                    .map_err(|_| "echo: no answer in 10 s".to_string())?
                    .map_err(|e| e.to_string())?;
                lat.borrow_mut().push(a.elapsed().as_secs_f64() * 1e3);
            }
            Ok::<(), String>(())
        }));
    }
    for t in tasks {
        t.await??;
    }
    let secs = t0.elapsed().as_secs_f64();
    let lat_ms = std::mem::take(&mut *lat.borrow_mut());
    Ok(Report {
        ops: lat_ms.len(),
        secs,
        lat_ms,
        starts_ms: Vec::new(),
        t0_unix_ms: 0.0,
    })
}

/// The `fanout` case's sizes, as benches/fanout-floor.mjs has them: a put,
/// its answer, and one watcher's event as a server frames it (about what
/// the `watch` case's put and events take on the wire).
const FANOUT_PUT_BYTES: usize = 48;
const FANOUT_ANSWER_BYTES: usize = 40;
const FANOUT_EVENT_BYTES: usize = 72;

/// The floor of the `watch` case, against benches/fanout-floor.mjs: the same
/// connections, watchers spread over them the same way and one writer on the
/// first, but raw TCP: per cycle the writer sends a put and every connection
/// reads its watchers' events (the writer's with the put's answer), nothing
/// decoded. Counted in events, as `watch` is.
async fn fanout(addr: &str, clients: usize, max_puts: usize, max_ms: u64) -> Result<Report> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let done = Rc::new(Cell::new(0usize)); // connections that read a cycle's bytes
    let notify = Rc::new(Notify::new());
    let mut writers = Vec::new(); // kept: a dropped write half would end its connection
    let mut tasks = Vec::new();
    for _ in 0..clients {
        let mut s = TcpStream::connect(addr).await?;
        s.set_nodelay(true)?;
        // One at a time, so the server knows the first as the writer's.
        s.write_all(b"W").await?;
        let mut ack = [0u8; 1];
        timeout(CALL_TIMEOUT, s.read_exact(&mut ack))
            .await
            .map_err(|_| "fanout: not registered in 10 s")??;
        let (mut r, w) = s.into_split();
        let c = writers.len();
        writers.push(w);
        let events = WATCHERS / clients + usize::from(c < WATCHERS % clients);
        let want = events * FANOUT_EVENT_BYTES + if c == 0 { FANOUT_ANSWER_BYTES } else { 0 };
        let (done, notify) = (done.clone(), notify.clone());
        tasks.push(tokio::task::spawn_local(async move {
            let mut buf = vec![0u8; want];
            while r.read_exact(&mut buf).await.is_ok() {
                done.set(done.get() + 1);
                notify.notify_waiters();
            }
        }));
    }
    let writer = writers.first_mut().ok_or("fanout: no connection")?;
    let put = [b'P'; FANOUT_PUT_BYTES];
    let mut lat = Vec::with_capacity(max_puts);
    let t0 = Instant::now();
    let deadline = t0 + Duration::from_millis(max_ms);
    while lat.len() < max_puts && Instant::now() <= deadline {
        let a = Instant::now();
        let target = (lat.len() + 1) * clients;
        writer.write_all(&put).await?;
        let all = async {
            loop {
                let wait = notify.notified();
                if done.get() >= target {
                    return;
                }
                wait.await;
            }
        };
        timeout(CALL_TIMEOUT, all)
            .await
            .map_err(|_| "fanout: a cycle took over 10 s")?;
        lat.push(a.elapsed().as_secs_f64() * 1e3);
    }
    let secs = t0.elapsed().as_secs_f64();
    for t in tasks {
        t.abort();
    }
    Ok(Report {
        ops: lat.len() * WATCHERS,
        secs,
        lat_ms: lat,
        starts_ms: Vec::new(),
        t0_unix_ms: 0.0,
    })
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((p / 100.0 * sorted.len() as f64) as usize).min(sorted.len() - 1)]
}

async fn main_async(args: Vec<String>) -> Result<String> {
    let [addr, case, clients, max_ops, max_ms] = &args[..] else {
        return Err(
            "usage: edge-lease-load <host:port> <case> <clients> <max ops> <max ms>".into(),
        );
    };
    let (n, max_ops, max_ms): (usize, usize, u64) =
        (clients.parse()?, max_ops.parse()?, max_ms.parse()?);
    if case == "echo" {
        let mut r = echo(addr, n.max(1), max_ops, max_ms).await?;
        return Ok(summary(&mut r));
    }
    if case == "fanout" {
        let mut r = fanout(addr, n.max(1), max_ops, max_ms).await?;
        return Ok(summary(&mut r));
    }
    let mut conns = Vec::new();
    for _ in 0..n.max(1) {
        conns.push(Client::connect(addr).await?);
    }
    // "watch", or "watch:N" for N puts in flight.
    let mut r = if let Some(rest) = case.strip_prefix("watch") {
        let window = match rest.strip_prefix(':') {
            Some(n) => n.parse()?,
            None if rest.is_empty() => 1,
            None => return Err(format!("unknown case {case}").into()),
        };
        watch(&conns, max_ops, max_ms, window).await?
    } else {
        run(&conns, case, max_ops, max_ms).await?
    };
    Ok(summary(&mut r))
}

/// Requests slower than this are listed one by one (start and duration).
const SLOW_MS: f64 = 50.0;
/// At most this many of them.
const MAX_SLOW: usize = 50;

/// The one JSON line benches/server.mjs reads. With start times kept, also
/// the slowest request (`max`, `maxStart`), the slowest second (the whole
/// second after t0 in which the fewest operations completed: `worstSecond`
/// with its `ops` and the slowest request completed in it), every request
/// over SLOW_MS (`slow`: [start, ms], the first MAX_SLOW) and `t0` (Unix ms).
fn summary(r: &mut Report) -> String {
    let mut timing = String::new();
    if !r.starts_ms.is_empty() {
        let (mut max, mut max_start) = (0.0f64, 0.0f64);
        let mut slow = Vec::new();
        let whole = r.secs.floor() as usize;
        let mut seconds = vec![(0usize, 0.0f64); whole];
        for (&start, &ms) in r.starts_ms.iter().zip(&r.lat_ms) {
            if ms > max {
                (max, max_start) = (ms, start);
            }
            if ms > SLOW_MS && slow.len() < MAX_SLOW {
                slow.push(format!("[{start:.1},{ms:.2}]"));
            }
            if let Some(s) = seconds.get_mut(((start + ms) / 1e3) as usize) {
                s.0 += 1;
                s.1 = s.1.max(ms);
            }
        }
        let worst = seconds
            .iter()
            .enumerate()
            .min_by_key(|(_, s)| s.0)
            .map_or("null".to_string(), |(i, s)| {
                format!(r#"{{"second":{i},"ops":{},"max":{:.2}}}"#, s.0, s.1)
            });
        timing = format!(
            r#","max":{max:.2},"maxStart":{max_start:.1},"worstSecond":{worst},"slow":[{}],"t0":{:.1}"#,
            slow.join(","),
            r.t0_unix_ms
        );
    }
    r.lat_ms.sort_by(f64::total_cmp);
    let (p50, p99) = (percentile(&r.lat_ms, 50.0), percentile(&r.lat_ms, 99.0));
    format!(
        r#"{{"ops":{},"secs":{:.4},"p50":{p50:.4},"p99":{p99:.4}{timing}}}"#,
        r.ops, r.secs
    )
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let local = tokio::task::LocalSet::new();
    match local.block_on(&rt, main_async(args)) {
        Ok(line) => println!("{line}"),
        Err(e) => {
            println!(r#"{{"error":{:?}}}"#, e.to_string());
            std::process::exit(1);
        }
    }
}
