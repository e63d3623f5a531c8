// etcd's periodic auto-compaction (etcdserver/api/v3compactor/periodic.go)
// over the engine: every tenth of the period (at most 6 minutes) it notes
// the revision; once a period has passed since the last compaction it
// compacts at the revision noted a period ago (then every min(period, 1h)).
// Revision mode needs no timer: the engine's `history` option keeps the
// last N revisions as writes come (main.mjs).

const HOUR = 3_600_000;

/**
 * Starts the timer; returns stop(). `log(message)` hears failures;
 * `compact(revision)` compacts (default: the engine's, untimed).
 */
export function periodicCompactor(lessor, periodMs, { log = console.error, now = Date.now, compact = (rev) => lessor.compact(rev) } = {}) {
  const retryMs = Math.min(periodMs, HOUR) / 10;
  const compactIntervalMs = Math.min(periodMs, HOUR);
  const retentions = Math.floor(periodMs / retryMs) + 1;
  const revs = [];
  let lastSuccess = now();
  let baseMs = periodMs;
  let timer = null;
  let stopped = false;

  const step = () => {
    if (stopped) return;
    revs.push(lessor.revision);
    if (revs.length > retentions) revs.shift(); // revs[0]: the revision a period ago
    timer = setTimeout(run, retryMs);
    timer.unref?.();
  };
  const run = () => {
    if (stopped) return;
    if (now() - lastSuccess >= baseMs) {
      if (baseMs === periodMs) baseMs = compactIntervalMs;
      const rev = revs[0];
      try {
        compact(rev);
        lastSuccess = now();
      } catch (e) {
        // Already compacted that far is a success, as etcd counts it.
        if (e?.code === "Compacted") lastSuccess = now();
        else log(`edge-lease: auto compaction at revision ${rev} failed: ${e?.message ?? e}`);
      }
    }
    step();
  };
  step();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}
