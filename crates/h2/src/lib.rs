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

mod events;
mod ffi;
mod hpack;
mod inbound;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use events::{Event, Events};
use h2::server::{Connection, Handshake, SendResponse};
use h2::{RecvStream, SendStream};
use http::{HeaderMap, HeaderValue, Request, Response};
use inbound::{Broken, Inbound};
use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

/// A call asks its sender to wait once this many messages, or bytes, wait
/// for flow control (counted after h2 took what the window allows). As
/// etcd's watch streams, which buffer 128 responses: a watcher told to wait
/// restarts later from where it was, its events then batched, where etcd
/// would still have sent them one response each.
const HIGH_WATER_MESSAGES: usize = 128;
const HIGH_WATER_BYTES: usize = 16 << 20;
/// Request bytes a waiting call holds unparsed (they are read on, so the
/// connection's window and h2's frame budget keep moving for its other
/// calls); past this the call is reset.
const MAX_UNREAD: usize = 1 << 20;
/// Bytes waiting for the socket past which h2 is held back, once the host
/// says the socket is full.
const OUT_BUDGET: usize = 256 * 1024;

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
        if pipe.full && pipe.output.len() >= OUT_BUDGET {
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
    inbound: Inbound,
    state: State,
    calls: HashMap<u32, Call>,
    events: Events,
    max_message: usize,
    /// Output was queued since the last pump: `swap` pumps first. So many
    /// messages queued in one turn (a watch fan-out) cost one pump, not one
    /// each, and each pump polls every call on the connection.
    queued: bool,
}

impl Conn {
    pub fn new(limits: Limits) -> Conn {
        let pipe = Rc::new(RefCell::new(Pipe::default()));
        let mut builder = h2::server::Builder::new();
        // As grpc-go's defaults: room for a large message in flight without a
        // window update per 64 KiB.
        builder
            .initial_window_size(1 << 20)
            .initial_connection_window_size(1 << 22);
        if limits.max_concurrent_streams > 0 {
            builder.max_concurrent_streams(limits.max_concurrent_streams);
        }
        let state = State::Handshake(builder.handshake(Io(pipe.clone())));
        let mut conn = Conn {
            pipe,
            inbound: Inbound::default(),
            state,
            calls: HashMap::new(),
            events: Events::default(),
            max_message: limits.max_message,
            queued: false,
        };
        conn.pump();
        conn
    }

    /// Bytes read from the socket.
    pub fn input(&mut self, bytes: &[u8]) {
        let broken = self
            .inbound
            .feed(bytes, &mut self.pipe.borrow_mut().input)
            .err();
        self.pump();
        if let Some(why) = broken {
            // GOAWAY, then the end.
            if let State::Open(conn) = &mut self.state {
                conn.abrupt_shutdown(match why {
                    Broken::Protocol => h2::Reason::PROTOCOL_ERROR,
                    Broken::Compression => h2::Reason::COMPRESSION_ERROR,
                });
            }
            self.pump();
            self.close();
        }
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

    /// Queues one response message on call `id`; false once the call holds
    /// more than it can send now (an Event::Drain follows) or is gone.
    pub fn send(&mut self, id: u32, message: &[u8]) -> bool {
        let Some(call) = self.calls.get_mut(&id) else {
            return false;
        };
        if !call.send(message) {
            return false;
        }
        self.queued = true;
        if call.blocked {
            return false;
        }
        if !call.full() {
            return true;
        }
        // Messages wait for the take, so one turn's sends can fill the queue
        // while the window has room: h2 takes what it can before the sender
        // is told to wait.
        self.pump();
        match self.calls.get_mut(&id) {
            Some(call) if call.full() => {
                call.blocked = true;
                false
            }
            Some(call) => !call.gone,
            None => false,
        }
    }

    /// Answers call `id` with one message and status OK (a unary call's
    /// answer).
    pub fn reply(&mut self, id: u32, message: &[u8]) {
        if let Some(call) = self.calls.get_mut(&id) {
            call.send(message);
            call.finish(0, "");
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
    pub fn swap(&mut self, events: &mut Vec<u8>, output: &mut Vec<u8>) {
        if self.queued {
            self.pump();
        }
        events.clear();
        output.clear();
        std::mem::swap(events, &mut self.events.0);
        std::mem::swap(output, &mut self.pipe.borrow_mut().output);
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
            let events = &mut self.events;
            self.calls.retain(|&id, call| {
                progress |= call.poll(&mut cx, id, max, events);
                // Dropping a call may leave h2 a reset to send (RST_STREAM
                // NO_ERROR while the client's request side is still open,
                // as grpc-go sends): one more turn of the connection does.
                progress |= call.gone;
                !call.gone
            });
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
            ended: false,
            queue: VecDeque::new(),
            queued: 0,
            blocked: false,
            trailers: None,
            finished: false,
            gone: false,
        }
    }

    /// Queues one message; false if the call is over (nothing queued).
    fn send(&mut self, message: &[u8]) -> bool {
        if self.finished || self.gone || !self.start() {
            return false;
        }
        let mut framed = BytesMut::with_capacity(5 + message.len());
        framed.put_u8(0);
        framed.put_u32(message.len() as u32);
        framed.extend_from_slice(message);
        self.queued += framed.len();
        self.queue.push_back(framed.freeze());
        true
    }

    /// More waits for flow control than a sender should add to.
    fn full(&self) -> bool {
        self.queue.len() >= HIGH_WATER_MESSAGES || self.queued >= HIGH_WATER_BYTES
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

    /// Moves the call on; true if anything changed.
    fn poll(&mut self, cx: &mut Context<'_>, id: u32, max: usize, events: &mut Events) -> bool {
        let mut progress = false;
        if !self.blocked && self.partial.len() >= 5 {
            // Drained: the requests that came meanwhile.
            self.messages(id, max, events);
        }
        while let Some(recv) = &mut self.recv {
            match recv.poll_data(cx) {
                Poll::Ready(Some(Ok(data))) => {
                    let _ = recv.flow_control().release_capacity(data.len());
                    self.partial.extend_from_slice(&data);
                    progress = true;
                    if !self.blocked {
                        self.messages(id, max, events);
                    } else if self.partial.len() > MAX_UNREAD {
                        // A client that keeps sending on a call whose
                        // answers it does not read loses the call.
                        if let Some(send) = &mut self.send {
                            send.send_reset(h2::Reason::ENHANCE_YOUR_CALM);
                        }
                        return self.cancel(id, events);
                    }
                }
                Poll::Ready(Some(Err(_))) => return self.cancel(id, events),
                Poll::Ready(None) => {
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
            if self.blocked && self.queued == 0 {
                self.blocked = false;
                events.push(Event::Drain, id, &[]);
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
                self.recv = None;
                self.partial = BytesMut::new();
                return;
            }
            if self.partial.len() < 5 + len {
                // Room for the rest, once.
                self.partial.reserve(5 + len - self.partial.len());
                return;
            }
            let message = self.partial.split_to(5 + len);
            // The first byte is the compressed flag; the host decompresses.
            events.push_parts(Event::Message, id, &message[..1], &message[5..]);
        }
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
mod tests {
    use super::*;

    #[test]
    fn timeouts() {
        assert_eq!(timeout_ms(b"100m"), Some(100.0));
        assert_eq!(timeout_ms(b"5S"), Some(5000.0));
        assert_eq!(timeout_ms(b"2H"), Some(7_200_000.0));
        assert_eq!(timeout_ms(b"123456789S"), None);
        assert_eq!(timeout_ms(b"S"), None);
        assert_eq!(timeout_ms(b"5x"), None);
        assert_eq!(timeout_ms(b""), None);
    }

    fn frame(out: &mut Vec<u8>, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
        out.extend_from_slice(&(payload.len() as u32).to_be_bytes()[1..]);
        out.extend_from_slice(&[kind, flags]);
        out.extend_from_slice(&stream.to_be_bytes());
        out.extend_from_slice(payload);
    }

    /// A connection whose client sent `settings` and opened calls 1 and 3.
    fn two_calls(settings: &[u8]) -> Conn {
        let mut conn = Conn::new(Limits {
            max_concurrent_streams: 0,
            max_message: 1 << 20,
        });
        let (mut events, mut output) = (Vec::new(), Vec::new());
        let mut input = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
        frame(&mut input, 4, 0, 0, settings);
        let mut block = Vec::new();
        for (name, value) in [
            (&b":method"[..], &b"POST"[..]),
            (b":scheme", b"http"),
            (b":path", b"/etcdserverpb.Watch/Watch"),
            (b"content-type", b"application/grpc"),
        ] {
            block.push(0);
            block.push(name.len() as u8);
            block.extend_from_slice(name);
            block.push(value.len() as u8);
            block.extend_from_slice(value);
        }
        for id in [1, 3] {
            frame(&mut input, 1, 0x4, id, &block);
        }
        conn.input(&input);
        conn.swap(&mut events, &mut output);
        let (mut calls, mut at) = (0, 0);
        while at < events.len() {
            calls += (events[at] == Event::Call as u8) as usize;
            at += 9 + u32::from_le_bytes(events[at + 5..at + 9].try_into().unwrap()) as usize;
        }
        assert_eq!(calls, 2);
        conn
    }

    /// The DATA frames in `output`, as (stream, gRPC message) in order.
    fn data_frames(output: &[u8]) -> Vec<(u32, Vec<u8>)> {
        let mut data = Vec::new();
        let mut at = 0;
        while at + 9 <= output.len() {
            let len = u32::from_be_bytes([0, output[at], output[at + 1], output[at + 2]]) as usize;
            let stream = u32::from_be_bytes(output[at + 5..at + 9].try_into().unwrap());
            if output[at + 3] == 0 {
                // (Each message here fits one frame.)
                data.push((stream, output[at + 9 + 5..at + 9 + len].to_vec()));
            }
            at += 9 + len;
        }
        assert_eq!(at, output.len());
        data
    }

    #[test]
    fn messages_queued_in_one_turn_go_out_together_at_the_take() {
        let mut conn = two_calls(&[]);
        let (mut events, mut output) = (Vec::new(), Vec::new());
        let messages: [&[u8]; 4] = [b"one", b"two", b"three", b"four"];
        for (i, m) in messages.iter().enumerate() {
            assert!(conn.send(if i % 2 == 0 { 1 } else { 3 }, m));
        }
        conn.swap(&mut events, &mut output);
        // Each message in a DATA frame of its call, in the order sent.
        let data = data_frames(&output);
        let sent: Vec<(u32, Vec<u8>)> = messages
            .iter()
            .enumerate()
            .map(|(i, m)| (if i % 2 == 0 { 1 } else { 3 }, m.to_vec()))
            .collect();
        let on = |id| {
            sent.iter()
                .filter(|(s, _)| *s == id)
                .cloned()
                .collect::<Vec<_>>()
        };
        let got = |id| {
            data.iter()
                .filter(|(s, _)| *s == id)
                .cloned()
                .collect::<Vec<_>>()
        };
        assert_eq!(got(1), on(1));
        assert_eq!(got(3), on(3));
        // Nothing left for the next take.
        conn.swap(&mut events, &mut output);
        assert!(output.is_empty() && events.is_empty());
    }

    #[test]
    fn a_turn_past_the_high_water_mark_waits_only_when_the_window_is_shut() {
        // Window open (the default 64 KiB): a turn's 300 messages are all
        // taken, none is refused, and they go out in order.
        let mut conn = two_calls(&[]);
        let (mut events, mut output) = (Vec::new(), Vec::new());
        let sent: Vec<Vec<u8>> = (0..300).map(|i| format!("m{i}").into_bytes()).collect();
        for m in &sent {
            assert!(conn.send(1, m));
        }
        conn.swap(&mut events, &mut output);
        assert!(events.is_empty());
        let got: Vec<Vec<u8>> = data_frames(&output).into_iter().map(|(_, m)| m).collect();
        assert_eq!(got, sent);

        // Window shut (SETTINGS_INITIAL_WINDOW_SIZE 0): the sender is told to
        // wait at the mark, and every message queued is kept.
        let mut conn = two_calls(&[0, 4, 0, 0, 0, 0]);
        for i in 0..HIGH_WATER_MESSAGES {
            assert_eq!(
                conn.send(3, b"x"),
                i + 1 < HIGH_WATER_MESSAGES,
                "message {i}"
            );
        }
        assert!(!conn.send(3, b"y"));
        conn.swap(&mut events, &mut output);
        assert!(data_frames(&output).is_empty());
        assert_eq!(conn.calls[&3].queue.len(), HIGH_WATER_MESSAGES + 1);
    }

    #[test]
    fn messages_are_percent_encoded() {
        assert_eq!(
            percent_encode("etcdserver: key not found"),
            "etcdserver: key not found"
        );
        assert_eq!(percent_encode("100% é\n"), "100%25 %C3%A9%0A");
    }
}
