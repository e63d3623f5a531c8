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
  // (process.binding is deprecated, in documentation only: a process that
  // turns deprecations into errors gets the stream path.)
  if (process.throwDeprecation) return null;
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
 * Reads `socket` into `onBytes(buf)`: returns `{ start, pause, resume }`.
 * `start()` hands over what its stream holds already (bytes a sniffer put
 * back) and starts reading: call it once the controller is kept, since
 * `onBytes` may need it at once. EOF and errors still come as the socket's
 * 'end', 'error' and 'close'. The socket's read timer (setTimeout) does not
 * see these reads. `direct: false` forces the stream path.
 */
export function readBytes(socket, onBytes, { direct = state !== null } = {}) {
  const handle = socket._handle;
  if (!direct || !handle || typeof handle.useUserBuffer !== "function") {
    return {
      start() {
        const pending = socket.read();
        socket.on("data", onBytes);
        if (pending) onBytes(pending);
        socket.resume();
      },
      pause: () => socket.pause(),
      resume: () => socket.resume(),
    };
  }
  const { streamBaseState, kReadBytesOrError } = state;
  return {
    start() {
      const pending = socket.read();
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
    },
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
