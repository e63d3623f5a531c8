// The demo page: a dashboard of one etcd keyspace and its leases, from one
// of three sources: the server the page came from (edge-lease's, watched
// through edge-lease/client), or this page's own engine on the wall clock
// (optionally stored in IndexedDB) or on a simulated clock (the lock story).
// The controls act on the source on screen; the view is redrawn every frame.
//
// This entry holds the page's state and wires the modules that share it:
// source.mjs (which source is on screen), engine.mjs (this page's own
// lessors and their clocks), panels.mjs (drawing), controls.mjs (what the
// buttons do); log.mjs and dom.mjs serve them all.

import { wireControls } from "./controls.mjs";
import { $ } from "./dom.mjs";
import { drive, persistOn } from "./engine.mjs";
import { render } from "./panels.mjs";
import { showFirst } from "./source.mjs";
import { Timeline } from "./timeline.mjs";

// Everything the page holds: one object, handed to each module.
const state = {
  Lessor: null, // the engine's classes, once the wasm has loaded
  IndexedDbStore: null,
  engineLoading: null, // that load, started on first use
  real: null, // Session on the wall clock
  sim: null, // Session on a SimClock, made on first use
  server: null, // ServerSource, if the page came from a server
  lastPage: null, // the page lessor shown last (real or sim)
  active: null, // the source on screen
  lastDrive: performance.now(), // when time was last handed to the page's lessors
  wantLease: null, // a lease just granted: preselected in the put form once it shows
  // What the panels drew last, kept so each frame updates it in place.
  drawn: {
    leaseRows: new Map(), // lease id -> { el, fill, bar, left, keys, owner, keepAlive }
    keyRows: new Map(), // key -> { el, cells }
    lockRowEls: new Map(), // key -> { el, cells }
    keysShown: null, // the keyspace drawn: { source, revision, prefix, entries, keysBy }
    leaseOptions: "", // the put form's lease choices, as drawn
    timeline: new Timeline({ root: $("timeline"), axis: $("tl-axis"), lanes: $("tl-lanes"), empty: $("no-timeline") }),
  },
};

wireControls(state);
$("persist").checked = persistOn();
await showFirst(state);
setInterval(() => drive(state), 100);
function frame() {
  render(state);
  requestAnimationFrame(frame);
}
requestAnimationFrame(frame);
