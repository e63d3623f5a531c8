// A connection's bytes read straight off its native handle into one buffer
// shared by every connection, instead of through the socket's stream ('data'
// events): one Buffer and one trip through Readable's machinery less per
// read, ~0.9 µs of a call's ~18 µs on the server's one thread (measured with
// benches/socket-floor.mjs's echo: 8.2 -> 7.3 µs per exchange). The
// consumer must be done with the bytes when it returns (h2.mjs copies them
// into its module at once).
//
// It is what Socket's own `onread` option does, which node:net offers for
// sockets it connects but not for those a server accepts. It needs the read
// length Node keeps in its stream binding; where that is missing (a Node
// that removed process.binding), the socket's 'data' events are used.

const SHARED = Buffer.allocUnsafe(64 * 1024);

function streamState() {
  try {
    const b = process.binding("stream_wrap");
    if (b.streamBaseState && Number.isInteger(b.kReadBytesOrError)) return b;
  } catch {
    // process.binding gone or refusing this module: the stream path.
  }
  return null;
}
const state = streamState();

/**
 * Calls `onBytes(buf)` with each read of `socket`, starting with what its
 * stream holds already (bytes a sniffer put back). EOF and errors still come
 * as the socket's 'end', 'error' and 'close'. Returns `{ pause, resume }`,
 * which stop and restart reading. `direct: false` forces the stream path.
 */
export function readBytes(socket, onBytes, { direct = state !== null } = {}) {
  const pending = socket.read();
  const handle = socket._handle;
  if (!direct || !handle || typeof handle.useUserBuffer !== "function") {
    socket.on("data", onBytes);
    if (pending) onBytes(pending);
    socket.resume();
    return { pause: () => socket.pause(), resume: () => socket.resume() };
  }
  const { streamBaseState, kReadBytesOrError } = state;
  const onStreamRead = handle.onread;
  handle.useUserBuffer(SHARED);
  handle.onread = function (arrayBuffer) {
    const n = streamBaseState[kReadBytesOrError];
    if (n > 0) {
      if (!socket.destroyed) onBytes(SHARED.subarray(0, n));
      return undefined;
    }
    // EOF and errors: the stream's own handling, so 'end' and 'error' come as before.
    return onStreamRead.call(this, arrayBuffer);
  };
  // Flowing, so that the stream's EOF is emitted as 'end'.
  socket.resume();
  if (pending) onBytes(pending);
  return {
    pause() {
      if (!socket._handle || !handle.reading) return;
      handle.reading = false;
      handle.readStop();
    },
    resume() {
      if (!socket._handle || handle.reading || socket.destroyed) return;
      handle.reading = true;
      handle.readStart();
    },
  };
}
