//! The connection's unit tests: frames in, events and frames out.

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
    calls(settings, 2)
}

/// A connection whose client sent `settings` and opened `n` calls: 1, 3, ...
fn calls(settings: &[u8], n: u32) -> Conn {
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
    for id in (0..n).map(|i| 1 + 2 * i) {
        frame(&mut input, 1, 0x4, id, &block);
    }
    conn.input(&input);
    conn.swap(&mut events, &mut output);
    let (mut calls, mut at) = (0, 0);
    while at < events.len() {
        calls += (events[at] == Event::Call as u8) as usize;
        at += 9 + u32::from_le_bytes(events[at + 5..at + 9].try_into().unwrap()) as usize;
    }
    assert_eq!(calls, n as usize);
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
        assert_eq!(conn.send(if i % 2 == 0 { 1 } else { 3 }, m), Sent::Ok);
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
        assert_eq!(conn.send(1, m), Sent::Ok);
    }
    conn.swap(&mut events, &mut output);
    assert!(events.is_empty());
    let got: Vec<Vec<u8>> = data_frames(&output).into_iter().map(|(_, m)| m).collect();
    assert_eq!(got, sent);

    // Window shut (SETTINGS_INITIAL_WINDOW_SIZE 0): the sender is told to
    // wait at the mark, and every message queued is kept.
    let mut conn = two_calls(&[0, 4, 0, 0, 0, 0]);
    for i in 0..HIGH_WATER_MESSAGES {
        let told = if i + 1 < HIGH_WATER_MESSAGES {
            Sent::Ok
        } else {
            Sent::Full
        };
        assert_eq!(conn.send(3, b"x"), told, "message {i}");
    }
    assert_eq!(conn.send(3, b"y"), Sent::Full);
    conn.swap(&mut events, &mut output);
    assert!(data_frames(&output).is_empty());
    assert_eq!(conn.calls[&3].queue.len(), HIGH_WATER_MESSAGES + 1);
}

/// The WINDOW_UPDATE increments in `output` for `stream`, in order.
fn window_updates(output: &[u8], stream: u32) -> Vec<u32> {
    let mut found = Vec::new();
    let mut at = 0;
    while at + 9 <= output.len() {
        let len = u32::from_be_bytes([0, output[at], output[at + 1], output[at + 2]]) as usize;
        let id = u32::from_be_bytes(output[at + 5..at + 9].try_into().unwrap());
        if output[at + 3] == 8 && id == stream {
            found.push(u32::from_be_bytes(
                output[at + 9..at + 13].try_into().unwrap(),
            ));
        }
        at += 9 + len;
    }
    found
}

/// How many events of `kind` `events` holds.
fn count(events: &[u8], kind: Event) -> usize {
    let (mut n, mut at) = (0, 0);
    while at < events.len() {
        n += (events[at] == kind as u8) as usize;
        at += 9 + u32::from_le_bytes(events[at + 5..at + 9].try_into().unwrap()) as usize;
    }
    n
}

#[test]
fn requests_on_a_call_whose_answers_wait_keep_their_window_until_read() {
    // The client's window shut (SETTINGS_INITIAL_WINDOW_SIZE 0): call 3's
    // answers wait, and its sender is told to.
    let mut conn = two_calls(&[0, 4, 0, 0, 0, 0]);
    let (mut events, mut output) = (Vec::new(), Vec::new());
    for _ in 0..HIGH_WATER_MESSAGES {
        conn.send(3, b"answer");
    }
    assert_eq!(conn.send(3, b"answer"), Sent::Full);
    conn.swap(&mut events, &mut output);

    // It sends a whole stream window (65,535 bytes: the server's settings
    // are not acknowledged) of 15-byte requests meanwhile: they are read,
    // not parsed, and no window goes back; the call is not reset.
    let requests: Vec<u8> = (0..4369).flat_map(|_| *b"\0\0\0\0\x0a0123456789").collect();
    assert_eq!(requests.len(), 65_535);
    let mut input = Vec::new();
    for piece in requests.chunks(16_384) {
        frame(&mut input, 0, 0, 3, piece);
    }
    conn.input(&input);
    conn.swap(&mut events, &mut output);
    assert_eq!(count(&events, Event::Message), 0);
    assert_eq!(count(&events, Event::Cancel), 0);
    assert_eq!(window_updates(&output, 3), Vec::<u32>::new());
    assert_eq!(
        (conn.calls[&3].partial.len(), conn.calls[&3].held),
        (65_535, 65_535)
    );

    // The client reads (opens its window): the answers go, then the
    // requests are handed on and their window given back.
    let mut input = Vec::new();
    frame(&mut input, 8, 0, 3, &(1u32 << 20).to_be_bytes());
    conn.input(&input);
    conn.swap(&mut events, &mut output);
    assert_eq!(data_frames(&output).len(), HIGH_WATER_MESSAGES + 1);
    assert_eq!(count(&events, Event::Drain), 1);
    assert_eq!(count(&events, Event::Message), 4369);
    assert_eq!(window_updates(&output, 3), vec![65_535]);
    assert_eq!((conn.calls[&3].partial.len(), conn.calls[&3].held), (0, 0));
}

#[test]
fn messages_are_percent_encoded() {
    assert_eq!(
        percent_encode("etcdserver: key not found"),
        "etcdserver: key not found"
    );
    assert_eq!(percent_encode("100% é\n"), "100%25 %C3%A9%0A");
}

/// A connection past the handshake (the client's SETTINGS sent), its
/// server's first frames taken.
fn open_conn() -> Conn {
    let mut conn = Conn::new(Limits {
        max_concurrent_streams: 0,
        max_message: 1 << 20,
    });
    let mut input = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
    frame(&mut input, 4, 0, 0, &[]);
    conn.input(&input);
    let (mut events, mut output) = (Vec::new(), Vec::new());
    conn.swap(&mut events, &mut output);
    conn
}

/// A header block of literal fields without indexing, new names.
fn literal_block(fields: &[(&[u8], &[u8])]) -> Vec<u8> {
    let mut block = Vec::new();
    for (name, value) in fields {
        block.push(0);
        block.push(name.len() as u8);
        block.extend_from_slice(name);
        block.push(value.len() as u8);
        block.extend_from_slice(value);
    }
    block
}

const GRPC_REQUEST: [(&[u8], &[u8]); 4] = [
    (b":method", b"POST"),
    (b":scheme", b"http"),
    (b":path", b"/etcdserverpb.KV/Range"),
    (b"content-type", b"application/grpc"),
];

/// The frames in `output`: (type, flags, stream, payload).
fn all_frames(output: &[u8]) -> Vec<(u8, u8, u32, Vec<u8>)> {
    let mut out = Vec::new();
    let mut at = 0;
    while at + 9 <= output.len() {
        let len = u32::from_be_bytes([0, output[at], output[at + 1], output[at + 2]]) as usize;
        let stream = u32::from_be_bytes(output[at + 5..at + 9].try_into().unwrap());
        out.push((
            output[at + 3],
            output[at + 4],
            stream,
            output[at + 9..at + 9 + len].to_vec(),
        ));
        at += 9 + len;
    }
    out
}

#[test]
fn a_url_as_authority_is_left_off_not_refused() {
    // grpc-go's :authority for `etcdctl endpoint status` (vendor/h2's patch).
    let mut conn = open_conn();
    let mut fields = GRPC_REQUEST.to_vec();
    fields.push((b":authority", b"http://127.0.0.1:2379"));
    // (Pseudo-headers first.)
    fields.swap(3, 4);
    let mut input = Vec::new();
    frame(&mut input, 1, 0x4, 1, &literal_block(&fields));
    conn.input(&input);
    let (mut events, mut output) = (Vec::new(), Vec::new());
    conn.swap(&mut events, &mut output);
    assert_eq!(count(&events, Event::Call), 1);
    assert!(all_frames(&output).iter().all(|f| f.0 != 3), "no reset");
}

/// HPACK bomb blocks after a first that indexes a 1500-byte field: each
/// :method, :scheme, the path and content-type as literals, then `refs`
/// one-byte references to the big field (index 62).
fn bomb(refs: usize, ids: std::ops::Range<u32>) -> Vec<u8> {
    let mut input = Vec::new();
    let mut first = literal_block(&GRPC_REQUEST);
    first.extend_from_slice(&[0x40, 6]);
    first.extend_from_slice(b"x-bomb");
    // A 1500-byte value: 127 + 1373 (HPACK integer, 7-bit prefix).
    first.extend_from_slice(&[0x7f, 0xdd, 0x0a]);
    first.extend_from_slice(&[b'v'; 1500]);
    frame(&mut input, 1, 0x5, 1, &first);
    let mut block = literal_block(&GRPC_REQUEST);
    block.extend(std::iter::repeat_n(0xbe, refs));
    for id in ids.step_by(2) {
        frame(&mut input, 1, 0x5, id, &block);
    }
    input
}

#[test]
fn a_header_list_past_the_limit_is_refused_without_being_kept() {
    // 165 references: 254 KB decoded each, under 4 times the limit: each
    // stream is answered 431 and nothing of it is kept; the connection
    // goes on.
    let mut conn = open_conn();
    conn.input(&bomb(165, 3..403));
    let (mut events, mut output) = (Vec::new(), Vec::new());
    conn.swap(&mut events, &mut output);
    assert_eq!(count(&events, Event::Call), 1, "only the first");
    let refused = all_frames(&output)
        .iter()
        .filter(|f| f.0 == 1 && f.2 > 1)
        .count();
    assert_eq!(refused, 200);
    assert!(all_frames(&output).iter().all(|f| f.0 != 7), "no GOAWAY");
    assert!(conn.held() < 256 * 1024, "held {}", conn.held());

    // 200 references (307 KB, past 4 times the limit): GOAWAY
    // ENHANCE_YOUR_CALM at the first such block.
    let mut conn = open_conn();
    conn.input(&bomb(200, 3..403));
    conn.swap(&mut events, &mut output);
    let goaway: Vec<_> = all_frames(&output)
        .into_iter()
        .filter(|f| f.0 == 7)
        .collect();
    assert_eq!(goaway.len(), 1);
    assert_eq!(goaway[0].3[4..8], 11u32.to_be_bytes());
    assert_eq!(count(&events, Event::Closed), 1);
}

#[test]
fn a_message_is_given_room_as_its_bytes_come_not_as_announced() {
    // A request that announces a 1 MiB message and sends 5 bytes of it
    // costs 5 bytes, not 1 MiB.
    let mut conn = two_calls(&[]);
    let mut input = Vec::new();
    frame(&mut input, 0, 0, 1, &[0, 0, 0x10, 0, 0, 1, 2, 3, 4, 5]);
    conn.input(&input);
    assert!(conn.calls[&1].partial.capacity() < 64 * 1024);
    assert!(conn.held() < 512 * 1024, "held {}", conn.held());
}

#[test]
fn the_module_holds_a_connection_s_messages_up_to_its_mark() {
    // Windows shut: whatever is sent waits. Three calls queue 320 KiB each;
    // the fourth's message passes MODULE_BYTES: it is kept, and the call is
    // told the module is over (the host keeps its next ones), as is any
    // call that sends after it.
    let mut conn = calls(&[0, 4, 0, 0, 0, 0], 5);
    let (mut events, mut output) = (Vec::new(), Vec::new());
    let big = vec![7u8; (320 << 10) - 5];
    assert_eq!(conn.room(1), HIGH_WATER_BYTES);
    for id in [1, 3, 5] {
        assert_eq!(conn.send(id, &big), Sent::Ok, "call {id}");
    }
    assert_eq!(conn.send(7, &big), Sent::Over);
    assert_eq!(conn.waiting(), 4 * (320 << 10));
    // The room the host may still fill, past what the module holds.
    assert_eq!(conn.room(9), HIGH_WATER_BYTES - 4 * (320 << 10));
    // Past the mark nothing more is queued here: each call's message is
    // the host's to keep until its Drain.
    assert_eq!(conn.send(9, b"small"), Sent::Kept);
    assert_eq!(conn.send(9, b"small"), Sent::Kept);
    assert_eq!(conn.waiting(), 4 * (320 << 10));
    assert_eq!(conn.room(7), 0);
    assert_eq!(conn.room(9), 0);
    conn.swap(&mut events, &mut output);
    assert_eq!(count(&events, Event::Drain), 0);

    // Call 1's client reads (its window and the connection's open): its
    // answer goes and the module is under its mark again.
    let mut input = Vec::new();
    frame(&mut input, 8, 0, 0, &(1u32 << 30).to_be_bytes());
    frame(&mut input, 8, 0, 1, &(1u32 << 30).to_be_bytes());
    conn.input(&input);
    let (mut sent, mut drains) = (0, 0);
    for _ in 0..4 {
        let more = conn.swap(&mut events, &mut output);
        sent += data_len(&output);
        drains += count(&events, Event::Drain);
        if !more {
            break;
        }
    }
    // Call 9, blocked with nothing queued, may go on; 7 still waits.
    assert_eq!((sent, drains), (320 << 10, 1));
    assert_eq!(conn.waiting(), 3 * (320 << 10));
    assert_eq!(conn.send(1, b"more"), Sent::Ok, "under the mark again");

    // Call 7's client reads: its queue empties and it is told to go on.
    let mut input = Vec::new();
    frame(&mut input, 8, 0, 7, &(1u32 << 30).to_be_bytes());
    conn.input(&input);
    let mut drains = Vec::new();
    for _ in 0..4 {
        let more = conn.swap(&mut events, &mut output);
        let mut at = 0;
        while at < events.len() {
            let len = u32::from_le_bytes(events[at + 5..at + 9].try_into().unwrap()) as usize;
            if events[at] == Event::Drain as u8 {
                drains.push(u32::from_le_bytes(
                    events[at + 1..at + 5].try_into().unwrap(),
                ));
            }
            at += 9 + len;
        }
        if !more {
            break;
        }
    }
    assert_eq!(drains, vec![7]);
    assert_eq!(conn.room(7), HIGH_WATER_BYTES - conn.waiting());
}

#[test]
fn a_message_sent_in_parts_goes_out_as_one() {
    // Its first part carries the gRPC header with the whole length; the
    // client sees one message, between the call's others.
    let mut conn = two_calls(&[]);
    let (mut events, mut output) = (Vec::new(), Vec::new());
    let big: Vec<u8> = (0..3000u32).map(|i| i as u8).collect();
    assert_eq!(conn.send(1, b"before"), Sent::Ok);
    assert_eq!(conn.send_part(1, &big[..1000], Some(3000)), Sent::Ok);
    assert_eq!(conn.send_part(1, &big[1000..2500], None), Sent::Ok);
    assert_eq!(conn.send_part(1, &big[2500..], None), Sent::Ok);
    assert_eq!(conn.send(1, b"after"), Sent::Ok);
    conn.swap(&mut events, &mut output);
    // The stream's DATA, however it is framed, read as gRPC messages.
    let mut data = Vec::new();
    let mut at = 0;
    while at + 9 <= output.len() {
        let len = u32::from_be_bytes([0, output[at], output[at + 1], output[at + 2]]) as usize;
        if output[at + 3] == 0 && output[at + 5..at + 9] == 1u32.to_be_bytes() {
            data.extend_from_slice(&output[at + 9..at + 9 + len]);
        }
        at += 9 + len;
    }
    let mut got = Vec::new();
    let mut at = 0;
    while at + 5 <= data.len() {
        let len = u32::from_be_bytes(data[at + 1..at + 5].try_into().unwrap()) as usize;
        got.push(data[at + 5..at + 5 + len].to_vec());
        at += 5 + len;
    }
    assert_eq!(at, data.len());
    assert_eq!(got, vec![b"before".to_vec(), big, b"after".to_vec()]);
}

/// The DATA payload bytes in `output`.
fn data_len(output: &[u8]) -> usize {
    all_frames(output)
        .iter()
        .filter(|f| f.0 == 0)
        .map(|f| f.3.len())
        .sum()
}
