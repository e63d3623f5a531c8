//! What a connection tells the host, as one flat buffer per batch: each
//! record is a kind byte, the call's stream id and the payload's length
//! (both u32, little-endian), then the payload. server/h2.mjs reads it.

#[derive(Clone, Copy)]
#[repr(u8)]
pub enum Event {
    /// A call began: grpc-timeout in ms (f64, negative if none), the
    /// grpc-encoding's length (u8) and name, the client-api-version's
    /// length (u8, at most 254; 255 if the header is absent) and text, the
    /// auth token (the `token` header, else `authorization`): 0 if neither,
    /// else 1, its length (u32) and bytes; then the path.
    Call = 1,
    /// A whole request message: the compressed-flag byte, then the message.
    Message = 2,
    /// The client half-closed its side.
    End = 3,
    /// The client reset the call, or the connection went: nothing more will come.
    Cancel = 4,
    /// A request message was longer than allowed: its length (u32).
    TooLarge = 5,
    /// A call that refused more output can take more.
    Drain = 6,
    /// The connection is over (stream id 0).
    Closed = 7,
}

#[derive(Default)]
pub struct Events(pub Vec<u8>);

impl Events {
    pub fn push(&mut self, kind: Event, id: u32, payload: &[u8]) {
        self.push_parts(kind, id, payload, &[]);
    }

    pub fn push_parts(&mut self, kind: Event, id: u32, a: &[u8], b: &[u8]) {
        self.0.reserve(9 + a.len() + b.len());
        self.0.push(kind as u8);
        self.0.extend_from_slice(&id.to_le_bytes());
        self.0
            .extend_from_slice(&((a.len() + b.len()) as u32).to_le_bytes());
        self.0.extend_from_slice(a);
        self.0.extend_from_slice(b);
    }
}
