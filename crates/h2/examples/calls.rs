//! The module's cost per gRPC call, natively: one connection, unary calls
//! one after another (HEADERS + DATA in, the answer out), as a range call
//! arrives from a client that already has its connection.
//!
//!   cargo run --release -p edge-lease-h2 --example calls [calls]

use edge_lease_h2::{Conn, Limits};
use std::time::Instant;

fn frame(out: &mut Vec<u8>, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
    out.extend_from_slice(&(payload.len() as u32).to_be_bytes()[1..]);
    out.push(kind);
    out.push(flags);
    out.extend_from_slice(&stream.to_be_bytes());
    out.extend_from_slice(payload);
}

fn literal(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    out.push(0);
    out.push(name.len() as u8);
    out.extend_from_slice(name);
    out.push(value.len() as u8);
    out.extend_from_slice(value);
}

fn main() {
    let n: u32 = std::env::args()
        .nth(1)
        .map_or(200_000, |s| s.parse().expect("a number of calls"));
    let mut conn = Conn::new(Limits {
        max_concurrent_streams: 0,
        max_message: 2 << 20,
    });
    let (mut events, mut output) = (Vec::new(), Vec::new());
    let mut hello = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
    frame(&mut hello, 4, 0, 0, &[]);
    frame(&mut hello, 4, 1, 0, &[]);
    conn.input(&hello);
    conn.swap(&mut events, &mut output);

    let mut block = Vec::new();
    for (k, v) in [
        (&b":method"[..], &b"POST"[..]),
        (b":scheme", b"http"),
        (b":path", b"/etcdserverpb.KV/Range"),
        (b":authority", b"127.0.0.1:2379"),
        (b"content-type", b"application/grpc"),
        (b"te", b"trailers"),
    ] {
        literal(&mut block, k, v);
    }
    let request = [0u8, 0, 0, 0, 6, 0x0a, 4, b'r', b'/', b'1', b'7'];
    let answer = [7u8; 90];
    let (mut input, mut written) = (Vec::new(), 0usize);
    let t0 = Instant::now();
    for i in 0..n {
        let id = 1 + 2 * i;
        input.clear();
        frame(&mut input, 1, 0x4, id, &block);
        frame(&mut input, 0, 0x1, id, &request);
        // The client gives back the connection window it used.
        if written > 0 {
            frame(&mut input, 8, 0, 0, &(written as u32).to_be_bytes());
        }
        conn.input(&input);
        conn.swap(&mut events, &mut output);
        assert!(events.len() > 20, "call {i}: no call or message");
        conn.reply(id, &answer);
        conn.swap(&mut events, &mut output);
        assert!(output.len() > answer.len(), "call {i}: no answer");
        written = answer.len() + 5;
    }
    let per = t0.elapsed().as_secs_f64() * 1e9 / n as f64;
    println!("{n} calls, {per:.0} ns per call");

    // Streams: 4 open calls, one message sent on each per round (a watch
    // fan-out's shape), the client giving the windows back.
    let first = 1 + 2 * n;
    input.clear();
    for k in 0..4 {
        frame(&mut input, 1, 0x4, first + 2 * k, &block);
        frame(&mut input, 0, 0, first + 2 * k, &request);
    }
    conn.input(&input);
    conn.swap(&mut events, &mut output);
    let rounds = n / 4;
    let t0 = Instant::now();
    for _ in 0..rounds {
        for k in 0..4 {
            conn.send(first + 2 * k, &answer);
        }
        conn.swap(&mut events, &mut output);
        assert!(output.len() > 4 * answer.len(), "no messages out");
        input.clear();
        frame(
            &mut input,
            8,
            0,
            0,
            &(4 * (answer.len() as u32 + 5)).to_be_bytes(),
        );
        for k in 0..4 {
            frame(
                &mut input,
                8,
                0,
                first + 2 * k,
                &(answer.len() as u32 + 5).to_be_bytes(),
            );
        }
        conn.input(&input);
        conn.swap(&mut events, &mut output);
    }
    let per = t0.elapsed().as_secs_f64() * 1e9 / (4 * rounds) as f64;
    println!("{} stream messages, {per:.0} ns per message", 4 * rounds);
}
