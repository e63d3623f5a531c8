//! The module's exports: plain functions over numbers, connections named by a
//! handle. Bytes come in through one scratch buffer (the host asks for room,
//! writes, then calls); bytes go out through `h2_take`, whose buffers stay
//! valid until the next call.

use crate::{live_bytes, Conn, Limits};
use std::cell::RefCell;

#[derive(Default)]
struct Module {
    conns: Vec<Option<Conn>>,
    free: Vec<u32>,
    scratch: Vec<u8>,
    events: Vec<u8>,
    output: Vec<u8>,
    taken: [u32; 5],
}

thread_local! {
    static MODULE: RefCell<Module> = RefCell::new(Module::default());
}

fn with_conn<R>(h: u32, f: impl FnOnce(&mut Conn, &[u8]) -> R) -> Option<R> {
    MODULE.with(|m| {
        let m = &mut *m.borrow_mut();
        let conn = m.conns.get_mut(h as usize)?.as_mut()?;
        Some(f(conn, &m.scratch))
    })
}

/// Scratch room kept between calls; a larger message's room is given back
/// at the next smaller one.
const SCRATCH_KEEP: usize = 1 << 20;

/// Room for `len` bytes of input; the host writes there before its next call.
#[no_mangle]
pub extern "C" fn h2_scratch(len: u32) -> *mut u8 {
    MODULE.with(|m| {
        let scratch = &mut m.borrow_mut().scratch;
        scratch.resize(len as usize, 0);
        scratch.shrink_to(SCRATCH_KEEP);
        scratch.as_mut_ptr()
    })
}

/// Bytes allocated in the module and not freed (its memory only grows).
#[no_mangle]
pub extern "C" fn h2_live_bytes() -> u32 {
    live_bytes() as u32
}

/// The bytes connection `h`'s buffers hold (`Conn::held`).
#[no_mangle]
pub extern "C" fn h2_held(h: u32) -> u32 {
    with_conn(h, |c, _| c.held() as u32).unwrap_or(0)
}

/// A new connection (the client preface not yet read); its handle.
#[no_mangle]
pub extern "C" fn h2_open(max_concurrent_streams: u32, max_message: u32) -> u32 {
    let conn = Conn::new(Limits {
        max_concurrent_streams,
        max_message: max_message as usize,
    });
    MODULE.with(|m| {
        let m = &mut *m.borrow_mut();
        match m.free.pop() {
            Some(h) => {
                m.conns[h as usize] = Some(conn);
                h
            }
            None => {
                m.conns.push(Some(conn));
                (m.conns.len() - 1) as u32
            }
        }
    })
}

/// The connection's resources back; its handle may be reused.
#[no_mangle]
pub extern "C" fn h2_free(h: u32) {
    MODULE.with(|m| {
        let m = &mut *m.borrow_mut();
        if let Some(slot @ Some(_)) = m.conns.get_mut(h as usize) {
            *slot = None;
            m.free.push(h);
        }
    })
}

/// The first `len` scratch bytes were read from the socket.
#[no_mangle]
pub extern "C" fn h2_input(h: u32, len: u32) {
    with_conn(h, |c, scratch| {
        c.input(&scratch[..(len as usize).min(scratch.len())])
    });
}

/// Whether the socket is full (1: h2's output is held back past a budget) or takes more (0).
#[no_mangle]
pub extern "C" fn h2_socket_full(h: u32, full: u32) {
    with_conn(h, |c, _| c.socket_full(full != 0));
}

/// The socket's read side ended.
#[no_mangle]
pub extern "C" fn h2_eof(h: u32) {
    with_conn(h, |c, _| c.eof());
}

/// Sends the first `len` scratch bytes on call `id` as part of a message:
/// its first (or all of it), `message` being the whole message's length,
/// or (`message` = u32::MAX) the next. Says what became of it (`Sent`: 0
/// gone, 1 ok, 2 full, 3 over, 4 kept: not queued); past 1 a Drain event
/// follows.
#[no_mangle]
pub extern "C" fn h2_send_part(h: u32, id: u32, len: u32, message: u32) -> u32 {
    with_conn(h, |c, scratch| {
        let part = &scratch[..(len as usize).min(scratch.len())];
        let message = (message != u32::MAX).then_some(message as usize);
        c.send_part(id, part, message) as u32
    })
    .unwrap_or(0)
}

/// Bytes connection `h`'s calls have waiting in the module.
#[no_mangle]
pub extern "C" fn h2_waiting(h: u32) -> u32 {
    with_conn(h, |c, _| c.waiting().min(u32::MAX as usize) as u32).unwrap_or(0)
}

/// Bytes call `id` may queue before its sender would be told to wait; 0:
/// wait for a Drain event.
#[no_mangle]
pub extern "C" fn h2_room(h: u32, id: u32) -> u32 {
    with_conn(h, |c, _| c.room(id).min(u32::MAX as usize) as u32).unwrap_or(0)
}

/// Answers call `id` with the first `len` scratch bytes as its one message, and status OK.
#[no_mangle]
pub extern "C" fn h2_reply(h: u32, id: u32, len: u32) {
    with_conn(h, |c, scratch| {
        c.reply(id, &scratch[..(len as usize).min(scratch.len())])
    });
}

/// Ends call `id` with gRPC status `code` and the first `len` scratch bytes (UTF-8) as its message.
#[no_mangle]
pub extern "C" fn h2_finish(h: u32, id: u32, code: u32, len: u32) {
    with_conn(h, |c, scratch| {
        let text =
            String::from_utf8_lossy(&scratch[..(len as usize).min(scratch.len())]).into_owned();
        c.finish(id, code, &text)
    });
}

/// GOAWAY: calls in progress go on, no new ones.
#[no_mangle]
pub extern "C" fn h2_shutdown(h: u32) {
    with_conn(h, |c, _| c.shutdown());
}

/// GOAWAY ENHANCE_YOUR_CALM, and the connection ends (its calls cancelled).
#[no_mangle]
pub extern "C" fn h2_calm(h: u32) {
    with_conn(h, |c, _| c.calm());
}

/// The events and the bytes to write since the last take, as a pointer to
/// five u32s: events' address and length, output's address and length, and
/// 1 if there is more to write (take again once this is written), else 0.
#[no_mangle]
pub extern "C" fn h2_take(h: u32) -> *const u32 {
    MODULE.with(|m| {
        let m = &mut *m.borrow_mut();
        let mut more = false;
        if let Some(Some(conn)) = m.conns.get_mut(h as usize) {
            more = conn.swap(&mut m.events, &mut m.output);
        } else {
            m.events.clear();
            m.output.clear();
        }
        m.taken = [
            m.events.as_ptr() as u32,
            m.events.len() as u32,
            m.output.as_ptr() as u32,
            m.output.len() as u32,
            more as u32,
        ];
        m.taken.as_ptr()
    })
}
