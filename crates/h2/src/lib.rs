//! HTTP/2 and gRPC message framing for the server's gRPC transport.
//!
//! server/grpc.mjs owns the sockets, the calls and the services; this crate
//! owns the protocol. Node's HTTP/2 spends ~40 µs of CPU per call on JS stream
//! objects and callbacks before any gRPC work (benches/ANALYSIS.md); here the
//! bytes of one socket read, however many frames they hold, go in with one
//! call and come back as one batch of events.
//!
//! Built for wasm32-wasip1, not wasm32-unknown-unknown: h2 reads
//! `Instant::now()` when a stream is reset, which only a target with a clock
//! can answer (server/h2.mjs gives it one).
//!
//! h2 is driven with a no-op waker: `pump` polls the connection and each
//! call until nothing progresses, after every input, and at the take
//! (`swap`) when messages were queued since (a turn's messages, however
//! many, cost one pump).
//!
//! The client's bytes go to h2 as they come: h2 decodes each header block
//! from the bytes as sent, its HPACK table's entries shared, not copied, by
//! the fields that refer to them, and keeps at most MAX_HEADER_LIST of a
//! block (vendor/h2 is patched for grpc-go's URL :authority, which h2
//! refused: an HPACK re-encoder in front of it did that before, and
//! expanded each block in full before h2 saw it).

#[cfg(target_arch = "wasm32")]
mod alloc;
mod budget;
mod events;
mod ffi;

use budget::Budget;
use bytes::{Buf, BufMut, Bytes, BytesMut};
use events::{Event, Events};
use h2::server::{Connection, Handshake, SendResponse};
use h2::{RecvStream, SendStream};
use http::{HeaderMap, HeaderValue, Request, Response};
use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};
use std::time::Instant;

/// A call asks its sender to wait once this many of its messages wait for
/// flow control (counted after h2 took what the window allows), or this
/// many bytes of all its connection's calls together. As etcd's watch
/// streams, which buffer 128 responses: a watcher told to wait restarts
/// later from where it was, its events then batched, where etcd would
/// still have sent them one response each. The bytes were a call's own
/// mark, and 1000 streams a connection that do not read could each hold
/// it, all in the one module.
const HIGH_WATER_MESSAGES: usize = 128;
const HIGH_WATER_BYTES: usize = 16 << 20;
/// Of those bytes, what the module itself holds: past this a send says
/// "the connection is over" (`Sent::Over`) and the host keeps the rest of
/// the call's messages (server/h2.mjs), handing them over at its Drain.
/// wasm memory never shrinks, and the host's is given back once freed: a
/// client that stops reading costs the module at most this a connection.
const MODULE_BYTES: usize = 1 << 20;
/// Bytes waiting for the socket past which h2 is held back, once the host
/// says the socket is full.
const OUT_BUDGET: usize = 256 * 1024;
/// Bytes h2 may write between two takes (the host takes again in its next
/// turn): a client opening its windows wide at once had every call's
/// answers written in one go (20 streams' catch-up: ~500 MiB of the
/// module's memory for 200 MiB of answers).
const OUT_TURN: usize = 1 << 20;
/// SETTINGS_MAX_HEADER_LIST_SIZE: a request's header list, decoded, as
/// HPACK counts it (name + value + 32 a field). Past it h2 refuses the
/// stream (431, then RST_STREAM), past 4 times it the connection (GOAWAY
/// ENHANCE_YOUR_CALM), keeping nothing past the limit meanwhile. grpc-go
/// (etcd) advertises 16 MiB; gRPC metadata is a few hundred bytes, and
/// proxies default to about this (Envoy 60 KiB, nghttp2 64 KiB).
const MAX_HEADER_LIST: u32 = 64 * 1024;
/// A buffer left with more room than this once drained gives it back (wasm
/// memory does not shrink, but the allocator can hand it to others).
const KEEP: usize = 64 * 1024;

#[cfg(target_arch = "wasm32")]
#[global_allocator]
static ALLOC: alloc::Counting = alloc::Counting;

/// Bytes allocated in the module and not freed (0 where not counted).
pub fn live_bytes() -> usize {
    #[cfg(target_arch = "wasm32")]
    return alloc::live();
    #[cfg(not(target_arch = "wasm32"))]
    0
}

/// `buf`, empty, with at most `keep` bytes of room.
fn release(buf: &mut Vec<u8>, keep: usize) {
    buf.clear();
    buf.shrink_to(keep);
}

/// The bytes between h2 and the socket: what was read and not yet parsed,
/// what is to be written.
#[derive(Default)]
struct Pipe {
    input: BytesMut,
    eof: bool,
    output: Vec<u8>,
    /// The host's socket holds more than it wants: h2 is held back.
    full: bool,
}

impl Pipe {
    /// h2 may write no more until the host takes what it wrote (or, the
    /// socket full, until it drains).
    fn held_back(&self) -> bool {
        self.output.len() >= if self.full { OUT_BUDGET } else { OUT_TURN }
    }

    /// The client does not read: its socket is full and h2 held back.
    fn stuck(&self) -> bool {
        self.full && self.output.len() >= OUT_BUDGET
    }
}

struct Io(Rc<RefCell<Pipe>>);

impl tokio::io::AsyncRead for Io {
    fn poll_read(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let mut pipe = self.0.borrow_mut();
        if pipe.input.is_empty() {
            // Nothing filled at EOF is how AsyncRead says "closed".
            return if pipe.eof {
                Poll::Ready(Ok(()))
            } else {
                Poll::Pending
            };
        }
        let n = buf.remaining().min(pipe.input.len());
        buf.put_slice(&pipe.input[..n]);
        pipe.input.advance(n);
        Poll::Ready(Ok(()))
    }
}

impl tokio::io::AsyncWrite for Io {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        b: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let mut pipe = self.0.borrow_mut();
        // A client that does not read stops h2 here; its calls then wait
        // for flow control, and the calls' senders for Drain.
        if pipe.held_back() {
            return Poll::Pending;
        }
        pipe.output.extend_from_slice(b);
        Poll::Ready(Ok(b.len()))
    }
    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

enum State {
    Handshake(Handshake<Io, Bytes>),
    Open(Connection<Io, Bytes>),
    Closed,
}

/// What became of a message queued with `Conn::send`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sent {
    /// The call or the connection is gone: nothing was queued.
    Gone = 0,
    /// Queued; the call may send more.
    Ok = 1,
    /// Queued, and the call holds HIGH_WATER_MESSAGES waiting for flow
    /// control: its sender should wait for Event::Drain.
    Full = 2,
    /// Queued, and the module holds MODULE_BYTES of the connection's
    /// messages: the host keeps the call's next ones until Event::Drain.
    Over = 3,
    /// Not queued: the module held MODULE_BYTES of the connection's
    /// messages already. The host keeps this one too.
    Kept = 4,
}

/// Limits a connection is opened with.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Calls one connection may have open at once (0: h2's default, no limit).
    pub max_concurrent_streams: u32,
    /// A request message longer than this is reported, not buffered.
    pub max_message: usize,
}

/// One HTTP/2 connection serving gRPC calls.
pub struct Conn {
    pipe: Rc<RefCell<Pipe>>,
    state: State,
    calls: HashMap<u32, Call>,
    events: Events,
    max_message: usize,
    /// The CPU its input may take.
    budget: Budget,
    /// Bytes its calls have waiting (as of the last pump, and sends since).
    waiting: usize,
    /// Output was queued since the last pump: `swap` pumps first. So many
    /// messages queued in one turn (a watch fan-out) cost one pump, not one
    /// each, and each pump polls every call on the connection.
    queued: bool,
    /// The last take left h2 held back (OUT_TURN): the next pumps first.
    more: bool,
}

impl Conn {
    pub fn new(limits: Limits) -> Conn {
        let pipe = Rc::new(RefCell::new(Pipe::default()));
        let mut builder = h2::server::Builder::new();
        // As grpc-go's defaults: room for a large message in flight without a
        // window update per 64 KiB.
        builder
            .initial_window_size(1 << 20)
            .initial_connection_window_size(1 << 22)
            .max_header_list_size(MAX_HEADER_LIST);
        if limits.max_concurrent_streams > 0 {
            builder.max_concurrent_streams(limits.max_concurrent_streams);
        }
        let state = State::Handshake(builder.handshake(Io(pipe.clone())));
        let mut conn = Conn {
            pipe,
            state,
            calls: HashMap::new(),
            events: Events::default(),
            max_message: limits.max_message,
            budget: Budget::new(Instant::now()),
            waiting: 0,
            queued: false,
            more: false,
        };
        conn.pump();
        conn
    }

    /// Bytes read from the socket.
    pub fn input(&mut self, bytes: &[u8]) {
        let start = Instant::now();
        self.pipe.borrow_mut().input.extend_from_slice(bytes);
        self.pump();
        {
            let mut pipe = self.pipe.borrow_mut();
            if pipe.input.is_empty() && pipe.input.capacity() > KEEP {
                pipe.input = BytesMut::new();
            }
        }
        if !self.budget.spend(start, Instant::now()) {
            self.go_away(h2::Reason::ENHANCE_YOUR_CALM);
        }
    }

    /// GOAWAY ENHANCE_YOUR_CALM, then the end: the connection takes more
    /// than it may (the host's memory guard).
    pub fn calm(&mut self) {
        self.go_away(h2::Reason::ENHANCE_YOUR_CALM);
    }

    /// GOAWAY with `reason`, then the end (its calls are cancelled).
    fn go_away(&mut self, reason: h2::Reason) {
        if let State::Open(conn) = &mut self.state {
            conn.abrupt_shutdown(reason);
        }
        self.pump();
        self.close();
    }

    /// The bytes this connection's buffers hold: what waits to be read by
    /// h2 or written, events not yet taken, requests being assembled and
    /// answers waiting for the client's window (h2's own state, bounded by
    /// its settings, not counted).
    pub fn held(&self) -> usize {
        let pipe = self.pipe.borrow();
        let calls: usize = self
            .calls
            .values()
            .map(|c| c.partial.capacity() + c.queued)
            .sum();
        pipe.input.capacity() + pipe.output.capacity() + self.events.0.capacity() + calls
    }

    /// Whether the host's socket is full (it holds more than it wants to).
    pub fn socket_full(&mut self, full: bool) {
        self.pipe.borrow_mut().full = full;
        self.pump();
    }

    /// The socket's read side ended.
    pub fn eof(&mut self) {
        self.pipe.borrow_mut().eof = true;
        self.pump();
    }

    /// The module holds as much of its connection's calls' messages as it
    /// may, or the client does not read: no call should add to it.
    fn over(&self) -> bool {
        self.waiting >= MODULE_BYTES || self.pipe.borrow().stuck()
    }

    /// Bytes the connection's calls have waiting here.
    pub fn waiting(&self) -> usize {
        self.waiting
    }

    /// Queues one response message on call `id`. Past Sent::Ok the call is
    /// blocked: its requests wait too (back-pressure) until Event::Drain.
    pub fn send(&mut self, id: u32, message: &[u8]) -> Sent {
        self.send_part(id, message, Some(message.len()))
    }

    /// Queues part of a response message on call `id`: its first, with the
    /// message's whole length (`Some`), or the next (`None`), as `send`
    /// does a whole one. The host sends a large message in parts, so the
    /// module never holds much more than MODULE_BYTES of it.
    pub fn send_part(&mut self, id: u32, part: &[u8], message: Option<usize>) -> Sent {
        let over = self.over();
        let Some(call) = self.calls.get_mut(&id) else {
            return Sent::Gone;
        };
        if over && !call.finished && !call.gone {
            // Each of a connection's thousand calls adding one message past
            // the mark would make it a thousand messages.
            call.blocked = true;
            return Sent::Kept;
        }
        let before = call.queued;
        if !call.send(part, message) {
            return Sent::Gone;
        }
        self.waiting += call.queued - before;
        self.queued = true;
        if call.blocked {
            return if call.full() { Sent::Full } else { Sent::Over };
        }
        if !call.full() && !self.over() {
            return Sent::Ok;
        }
        // Messages wait for the take, so one turn's sends can fill the queue
        // while the window has room: h2 takes what it can before the sender
        // is told to wait.
        self.pump();
        let over = self.over();
        match self.calls.get_mut(&id) {
            Some(call) if call.full() || over => {
                call.blocked = true;
                if call.full() {
                    Sent::Full
                } else {
                    Sent::Over
                }
            }
            Some(call) if !call.gone => Sent::Ok,
            _ => Sent::Gone,
        }
    }

    /// Bytes call `id` may queue before its sender would be told to wait
    /// (what its connection's calls may still add); 0: wait now, an
    /// Event::Drain follows (as after `send` said false).
    pub fn room(&mut self, id: u32) -> usize {
        // (The host keeps what the module may not, up to HIGH_WATER_BYTES.)
        let connection = if self.pipe.borrow().stuck() {
            0
        } else {
            HIGH_WATER_BYTES.saturating_sub(self.waiting)
        };
        let Some(call) = self.calls.get_mut(&id) else {
            return 0;
        };
        let room = if call.blocked || call.full() {
            0
        } else {
            connection
        };
        if room == 0 && !call.gone {
            call.blocked = true;
        }
        room
    }

    /// Answers call `id` with one message and status OK (a unary call's
    /// answer).
    pub fn reply(&mut self, id: u32, message: &[u8]) {
        if let Some(call) = self.calls.get_mut(&id) {
            let before = call.queued;
            call.send(message, Some(message.len()));
            call.finish(0, "");
            self.waiting += call.queued - before;
            self.queued = true;
        }
    }

    /// Ends call `id` with a gRPC status, after what it has queued.
    pub fn finish(&mut self, id: u32, code: u32, message: &str) {
        if let Some(call) = self.calls.get_mut(&id) {
            call.finish(code, message);
            self.queued = true;
        }
    }

    /// Says GOAWAY: calls in progress finish, new ones are refused.
    pub fn shutdown(&mut self) {
        if let State::Open(conn) = &mut self.state {
            conn.graceful_shutdown();
        }
        self.pump();
    }

    /// The events and the bytes to write since the last call, swapped into
    /// the caller's buffers (cleared first) so both keep their storage.
    /// True if h2 has more to write: the host should take again (in its
    /// next turn, once this is written).
    pub fn swap(&mut self, events: &mut Vec<u8>, output: &mut Vec<u8>) -> bool {
        if self.queued || self.more {
            self.pump();
        }
        // (Taken last time: what a large batch left them is given back.)
        release(events, KEEP);
        release(output, KEEP);
        std::mem::swap(events, &mut self.events.0);
        std::mem::swap(output, &mut self.pipe.borrow_mut().output);
        self.more = output.len() >= OUT_TURN;
        self.more
    }

    fn pump(&mut self) {
        self.queued = false;
        let mut cx = Context::from_waker(Waker::noop());
        loop {
            let mut progress = false;
            let mut accepted = Vec::new();
            let mut over = false;
            match &mut self.state {
                State::Handshake(hs) => match Pin::new(hs).poll(&mut cx) {
                    Poll::Ready(Ok(conn)) => {
                        self.state = State::Open(conn);
                        progress = true;
                    }
                    Poll::Ready(Err(_)) => over = true,
                    Poll::Pending => {}
                },
                State::Open(conn) => loop {
                    match conn.poll_accept(&mut cx) {
                        Poll::Ready(Some(Ok(call))) => accepted.push(call),
                        Poll::Ready(Some(Err(_)) | None) => {
                            over = true;
                            break;
                        }
                        Poll::Pending => break,
                    }
                },
                State::Closed => return,
            }
            for (req, respond) in accepted {
                progress = true;
                self.accept(req, respond);
            }
            let max = self.max_message;
            // Whether the calls told to wait for the connection may go on.
            let may_add = !self.over();
            let events = &mut self.events;
            let mut waiting = 0;
            self.calls.retain(|&id, call| {
                progress |= call.poll(&mut cx, id, max, may_add, events);
                waiting += call.queued;
                // Dropping a call may leave h2 a reset to send (RST_STREAM
                // NO_ERROR while the client's request side is still open,
                // as grpc-go sends): one more turn of the connection does.
                progress |= call.gone;
                !call.gone
            });
            self.waiting = waiting;
            if over {
                return self.close();
            }
            if !progress {
                return;
            }
        }
    }

    fn close(&mut self) {
        if matches!(self.state, State::Closed) {
            return;
        }
        for (&id, call) in self.calls.iter() {
            if !call.gone {
                self.events.push(Event::Cancel, id, &[]);
            }
        }
        self.calls.clear();
        self.events.push(Event::Closed, 0, &[]);
        self.state = State::Closed;
    }

    fn accept(&mut self, req: Request<RecvStream>, mut respond: SendResponse<Bytes>) {
        let id = respond.stream_id().as_u32();
        let grpc = req
            .headers()
            .get(http::header::CONTENT_TYPE)
            .is_some_and(|v| v.as_bytes().starts_with(b"application/grpc"));
        if !grpc {
            // What etcd 3.4's grpc-go does with a request that is not gRPC.
            respond.send_reset(h2::Reason::PROTOCOL_ERROR);
            return;
        }
        let headers = req.headers();
        let timeout = headers
            .get("grpc-timeout")
            .and_then(|v| timeout_ms(v.as_bytes()))
            .unwrap_or(-1.0);
        let encoding = headers
            .get("grpc-encoding")
            .map(|v| v.as_bytes())
            .unwrap_or(b"identity");
        // (etcd counts calls per client version, which its Go client sends.)
        let version = headers.get("client-api-version").map(|v| v.as_bytes());
        // etcd's auth token: the metadata `token`, else `authorization`.
        let token = headers
            .get("token")
            .or_else(|| headers.get(http::header::AUTHORIZATION))
            .map(|v| v.as_bytes());
        let path = req.uri().path().as_bytes();
        let mut payload = Vec::with_capacity(
            15 + encoding.len()
                + version.map_or(0, <[u8]>::len)
                + token.map_or(0, <[u8]>::len)
                + path.len(),
        );
        payload.extend_from_slice(&timeout.to_le_bytes());
        payload.push(encoding.len().min(255) as u8);
        payload.extend_from_slice(&encoding[..encoding.len().min(255)]);
        match version {
            Some(v) => {
                payload.push(v.len().min(254) as u8);
                payload.extend_from_slice(&v[..v.len().min(254)]);
            }
            None => payload.push(255),
        }
        match token {
            Some(t) => {
                payload.push(1);
                payload.extend_from_slice(&(t.len() as u32).to_le_bytes());
                payload.extend_from_slice(t);
            }
            None => payload.push(0),
        }
        payload.extend_from_slice(path);
        self.events.push(Event::Call, id, &payload);
        let recv = req.into_body();
        self.calls.insert(id, Call::new(recv, respond));
    }
}

/// A call: the request stream being read and the response being written.
struct Call {
    recv: Option<RecvStream>,
    respond: SendResponse<Bytes>,
    send: Option<SendStream<Bytes>>,
    /// Request bytes not yet a whole message (or not yet parsed: while the
    /// call waits for Drain).
    partial: BytesMut,
    /// Of those, the bytes read while the call waited for Drain: their
    /// window is given back once they are parsed (back-pressure).
    held: usize,
    /// The client half-closed; said once the messages before it are.
    ended: bool,
    /// Response messages waiting for flow control.
    queue: VecDeque<Bytes>,
    queued: usize,
    blocked: bool,
    /// The status, sent once the queue is empty.
    trailers: Option<HeaderMap>,
    finished: bool,
    /// Done with: dropped on the next pump.
    gone: bool,
}

impl Call {
    fn new(recv: RecvStream, respond: SendResponse<Bytes>) -> Call {
        Call {
            recv: Some(recv),
            respond,
            send: None,
            partial: BytesMut::new(),
            held: 0,
            ended: false,
            queue: VecDeque::new(),
            queued: 0,
            blocked: false,
            trailers: None,
            finished: false,
            gone: false,
        }
    }

    /// Queues a message, or a part of one (the first, with the message's
    /// length, has the gRPC header); false if the call is over (nothing
    /// queued).
    fn send(&mut self, part: &[u8], message: Option<usize>) -> bool {
        if self.finished || self.gone || !self.start() {
            return false;
        }
        let header = if message.is_some() { 5 } else { 0 };
        let mut framed = BytesMut::with_capacity(header + part.len());
        if let Some(len) = message {
            framed.put_u8(0);
            framed.put_u32(len as u32);
        }
        framed.extend_from_slice(part);
        self.queued += framed.len();
        self.queue.push_back(framed.freeze());
        true
    }

    /// More waits for flow control than a sender should add to.
    fn full(&self) -> bool {
        self.queue.len() >= HIGH_WATER_MESSAGES
    }

    /// Sends the response headers if not yet sent; false if the stream is gone.
    fn start(&mut self) -> bool {
        if self.send.is_some() {
            return true;
        }
        match self.respond.send_response(grpc_response(), false) {
            Ok(s) => {
                self.send = Some(s);
                true
            }
            Err(_) => {
                self.gone = true;
                false
            }
        }
    }

    fn finish(&mut self, code: u32, message: &str) {
        if self.finished || self.gone {
            return;
        }
        self.finished = true;
        let mut status = HeaderMap::new();
        status.insert("grpc-status", HeaderValue::from(code));
        if !message.is_empty() {
            if let Ok(v) = HeaderValue::from_str(&percent_encode(message)) {
                status.insert("grpc-message", v);
            }
        }
        if self.send.is_none() {
            // Trailers-only: the status in the one HEADERS frame.
            let mut res = grpc_response();
            res.headers_mut().extend(status);
            let _ = self.respond.send_response(res, true);
            self.gone = true;
        } else {
            self.trailers = Some(status);
        }
    }

    /// Moves the call on; true if anything changed. `may_add`: the
    /// connection's calls may add to what waits.
    fn poll(
        &mut self,
        cx: &mut Context<'_>,
        id: u32,
        max: usize,
        may_add: bool,
        events: &mut Events,
    ) -> bool {
        let mut progress = false;
        if !self.blocked && (self.partial.len() >= 5 || self.held > 0) {
            // Drained: the requests that came meanwhile, and their window
            // (progress: the connection's next turn sends the update).
            self.messages(id, max, events);
            if self.held > 0 {
                self.release_held();
                progress = true;
            }
        }
        while let Some(recv) = &mut self.recv {
            match recv.poll_data(cx) {
                Poll::Ready(Some(Ok(data))) => {
                    self.partial.extend_from_slice(&data);
                    progress = true;
                    if self.blocked {
                        // Back-pressure, as etcd's: a client that sends
                        // faster than it reads the answers waits for the
                        // window, which comes back once its requests are
                        // parsed; nothing is reset, and what waits here is
                        // at most the stream's window. (Read on rather than
                        // left in h2, whose budget for small DATA frames
                        // buffered is the connection's.)
                        self.held += data.len();
                    } else {
                        let _ = recv.flow_control().release_capacity(data.len());
                        self.messages(id, max, events);
                    }
                }
                Poll::Ready(Some(Err(_))) => return self.cancel(id, events),
                Poll::Ready(None) => {
                    // (Nothing more can come: the window goes back.)
                    self.release_held();
                    self.recv = None;
                    self.ended = true;
                    progress = true;
                }
                Poll::Pending => break,
            }
        }
        // The half-close after the messages before it, once they are out.
        if self.ended && !self.blocked {
            self.ended = false;
            if !self.finished {
                events.push(Event::End, id, &[]);
            }
        }
        if self.gone {
            return progress;
        }
        // A reset by the client, once its request side is done.
        if self.recv.is_none() {
            let reset = match &mut self.send {
                Some(send) => send.poll_reset(cx),
                None => self.respond.poll_reset(cx),
            };
            if reset.is_ready() {
                return self.cancel(id, events);
            }
        }
        // (A call told to wait for the connection may have nothing queued,
        // nor have begun its answer.)
        if self.blocked && self.queued == 0 && may_add {
            self.blocked = false;
            events.push(Event::Drain, id, &[]);
            progress = true;
        }
        let Some(send) = &mut self.send else {
            return progress;
        };
        if self.queued > 0 {
            send.reserve_capacity(self.queued);
            let mut room = send.capacity();
            while room > 0 {
                let Some(front) = self.queue.front_mut() else {
                    break;
                };
                let chunk = front.split_to(room.min(front.len()));
                if front.is_empty() {
                    self.queue.pop_front();
                }
                room -= chunk.len();
                self.queued -= chunk.len();
                progress = true;
                if send.send_data(chunk, false).is_err() {
                    return self.cancel(id, events);
                }
            }
        }
        if self.queued == 0 {
            if let Some(status) = self.trailers.take() {
                let _ = send.send_trailers(status);
                self.gone = true;
                progress = true;
            }
        }
        progress
    }

    /// Splits whole messages off the request bytes.
    fn messages(&mut self, id: u32, max: usize, events: &mut Events) {
        while self.partial.len() >= 5 {
            let len = u32::from_be_bytes([
                self.partial[1],
                self.partial[2],
                self.partial[3],
                self.partial[4],
            ]) as usize;
            if len > max {
                // Reported, never buffered: dropping the request stream lets
                // h2 give its flow-control window back as the rest arrives.
                events.push(Event::TooLarge, id, &(len as u32).to_le_bytes());
                self.release_held();
                self.recv = None;
                self.partial = BytesMut::new();
                return;
            }
            if self.partial.len() < 5 + len {
                // (No room reserved for the length it announces: the
                // bytes take room as they come.)
                return;
            }
            let message = self.partial.split_to(5 + len);
            // The first byte is the compressed flag; the host decompresses.
            events.push_parts(Event::Message, id, &message[..1], &message[5..]);
        }
        if self.partial.is_empty() && self.partial.capacity() > KEEP {
            self.partial = BytesMut::new();
        }
    }

    /// Gives back the window of the request bytes read while the call waited.
    fn release_held(&mut self) {
        if let Some(recv) = &mut self.recv {
            let _ = recv.flow_control().release_capacity(self.held);
        }
        self.held = 0;
    }

    fn cancel(&mut self, id: u32, events: &mut Events) -> bool {
        if !self.gone {
            self.gone = true;
            events.push(Event::Cancel, id, &[]);
        }
        true
    }
}

fn grpc_response() -> Response<()> {
    let mut res = Response::new(());
    res.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/grpc"),
    );
    res
}

/// grpc-timeout ("100m", "5S", at most 8 digits and a unit) in milliseconds.
fn timeout_ms(v: &[u8]) -> Option<f64> {
    let (digits, unit) = v.split_at(v.len().checked_sub(1)?);
    if digits.is_empty() || digits.len() > 8 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let n: f64 = std::str::from_utf8(digits).ok()?.parse().ok()?;
    let ms = match unit {
        b"H" => 3_600_000.0,
        b"M" => 60_000.0,
        b"S" => 1_000.0,
        b"m" => 1.0,
        b"u" => 1e-3,
        b"n" => 1e-6,
        _ => return None,
    };
    Some(n * ms)
}

/// grpc-message's encoding: printable ASCII but '%' as is, the rest as %XX of UTF-8.
fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for &b in s.as_bytes() {
        if (0x20..0x7f).contains(&b) && b != b'%' {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests;
