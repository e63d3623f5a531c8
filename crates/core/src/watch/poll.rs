//! A poll: each watcher's next batch found in the keyspace's log, its
//! events made once however many watchers get them, within a poll's budget.

use super::{Polled, WatchEvents, Watchers};
use crate::counts::Counts;
use crate::kv::{Event, Keyspace};
use crate::types::Key;

/// At most this many revisions with changes in a watcher's range per poll:
/// etcd catches up a watcher in batches of 1000 such revisions (its
/// watchBatchMaxRevs, counted before the watcher's filters).
const BATCH_REVISIONS: usize = 1000;

/// At most about this many changes of the log read per watcher per poll
/// (a revision is never split): a watcher of a rare key far behind goes on
/// at the next poll instead of reading all history in one call.
const SCAN_CHANGES: usize = 4096;

/// How far back from the newest change a poll shares events between
/// watchers.
const SHARED_CHANGES: usize = 4096;

/// At most about this many events per watcher per poll: a revision with
/// more (a revoke of a lease with 100k keys) is handed out in parts, so
/// that no one poll holds the host for all of it.
const PART_EVENTS: usize = 4096;

/// About this many bytes of keys and values (`Event::bytes`) made into
/// events per poll: a catch-up over large values (20 MiB of history to
/// each of 100 watchers) is handed out over several polls, each watcher's
/// batch in parts cut at a change, so that no one poll holds the host for
/// all of it. An event made for one watcher costs the others nothing, so
/// watchers at the same place move on together. One poll's first event
/// goes out whatever its size.
const POLL_BYTES: usize = 1 << 20;

/// How far a batch has been found: read up to `from`, `revs` revisions
/// with changes in range so far, the last being `last`, and those changes
/// (`bytes` of events); found under the compaction point `compacted` (if it
/// moves, the search starts again, as the changes found may have been
/// dropped).
pub(super) struct Scan {
    compacted: i64,
    from: i64,
    revs: usize,
    last: i64,
    wanted: Vec<(i64, u32, Key)>,
    bytes: usize,
}

impl Watchers {
    /// `Lessor::poll_watches`, reading the keyspace's log; counts the
    /// previous versions it reads as etcd's watch stream does.
    pub fn poll(&mut self, kv: &Keyspace, counts: &mut Counts) -> Polled {
        let mut events = Vec::new();
        let batches = self.poll_into(kv, counts, &mut |ev| events.push(ev));
        Polled { events, batches }
    }

    /// `Lessor::poll_watches_into`: as `poll`, each event handed to `sink`
    /// as it is made (numbered from 0 in that order), none kept here.
    pub fn poll_into(
        &mut self,
        kv: &Keyspace,
        counts: &mut Counts,
        sink: &mut dyn FnMut(Event),
    ) -> Vec<WatchEvents> {
        let rev = kv.revision();
        let compacted = kv.compacted();
        let mut out = Vec::new();
        // Of each event handed out: whether it is a put, and a create.
        let mut made_kinds: Vec<(bool, bool)> = Vec::new();
        let mut cancelled = Vec::new();
        // The event of each change, without and with prev_kv, once made
        // (watchers of one change share it): by log position from `base`,
        // the first any watcher polled here reads, but at most SHARED_CHANGES
        // back from the newest (a watcher catching up from far back builds
        // its own events there; the table stays small).
        let newest = kv.position(rev + 1);
        let base = self
            .list
            .iter()
            .map(|(_, w)| w)
            .filter(|w| !w.paused && w.next <= rev && w.next >= compacted)
            .map(|w| kv.position(w.next))
            .min()
            .unwrap_or(newest)
            .max(newest.saturating_sub(SHARED_CHANGES));
        let mut made: Vec<[usize; 2]> = Vec::new();
        // Bytes of the events made so far (POLL_BYTES).
        let mut made_bytes = 0;
        for (id, w) in self.list.iter_mut() {
            let id = *id;
            if w.paused || w.next > rev {
                continue;
            }
            if w.next < compacted {
                cancelled.push(id);
                out.push(WatchEvents {
                    id,
                    events: Vec::new(),
                    compact_revision: compacted,
                    revision: rev,
                    partial: false,
                });
                continue;
            }
            // Find the batch: the changes in range from `next`, up to 1000
            // revisions of them (etcd's), reading at most about
            // SCAN_CHANGES changes this poll; if that is not enough, the
            // search goes on at the next poll.
            let found_before = w.scan.take().filter(|s| s.compacted == compacted);
            // A batch handed out in parts goes on where its last part ended.
            let part = w.part.take();
            if found_before
                .as_ref()
                .is_some_and(|s| made_bytes > 0 && made_bytes + s.bytes > POLL_BYTES)
            {
                // What it found earlier would take the poll past its bytes.
                (w.scan, w.part) = (found_before, part);
                continue;
            }
            let (skip, revs) = part.unwrap_or((0, 0));
            let mut scan = found_before.unwrap_or(Scan {
                compacted,
                from: w.next,
                revs,
                last: if part.is_some() { w.next } else { 0 },
                wanted: Vec::new(),
                bytes: 0,
            });
            let mut found = Vec::new();
            let mut upto = Some(rev + 1);
            let mut partial = false;
            let (mut read, mut last_read) = (0, 0);
            // Bytes of the events this watcher's batch would make here.
            let mut pending = scan.bytes;
            for (pos, at, sub, key) in kv.changes_from(scan.from) {
                if at == w.next && sub < skip {
                    continue;
                }
                read += 1;
                if read > SCAN_CHANGES && at != last_read {
                    scan.from = at;
                    upto = None;
                    break;
                }
                last_read = at;
                if !w.wants(key) {
                    continue;
                }
                let new_rev = at != scan.last;
                if new_rev && scan.revs == BATCH_REVISIONS {
                    upto = Some(at);
                    break;
                }
                let shared = (pos.checked_sub(base))
                    .and_then(|i| made.get(i))
                    .is_some_and(|m| m[w.req.prev_kv as usize] != usize::MAX);
                // (Sized only if it would be made here: an event made for
                // another watcher costs nothing, and most are, at the head.)
                let bytes = (!shared).then(|| kv.event_bytes(at, sub, key, w.req.prev_kv));
                let over = bytes.is_some_and(|b| {
                    made_bytes + pending > 0 && made_bytes + pending + b > POLL_BYTES
                });
                let items = found.len() + scan.wanted.len();
                if over && items == 0 {
                    // Nothing to hand out before it: the search goes on
                    // from this change at the next poll.
                    scan.from = at;
                    upto = None;
                    break;
                }
                if over || (!new_rev && items >= PART_EVENTS) {
                    // The rest of the batch at the next poll (a revision's
                    // rest too: inside one, only past PART_EVENTS).
                    w.part = Some((sub, scan.revs + new_rev as usize));
                    upto = Some(at);
                    partial = true;
                    break;
                }
                if new_rev {
                    scan.revs += 1;
                    scan.last = at;
                }
                pending += bytes.unwrap_or(0);
                found.push((Some(pos), at, sub, key, bytes));
            }
            let Some(upto) = upto else {
                // Made at a later poll, they share nothing: all their bytes
                // count. (Keys are shared: keeping them copies no bytes.)
                let size = |&(_, at, sub, key, b): &(_, i64, u32, &Key, Option<usize>)| {
                    b.unwrap_or_else(|| kv.event_bytes(at, sub, key, w.req.prev_kv))
                };
                scan.bytes += found.iter().map(size).sum::<usize>();
                let more = found
                    .into_iter()
                    .map(|(_, at, sub, key, _)| (at, sub, key.clone()));
                scan.wanted.extend(more);
                w.scan = Some(scan);
                // (Should the search start again, it starts where the part ended.)
                w.part = part;
                continue;
            };
            // The batch's events: those found at earlier polls (no position:
            // it may have moved since) made here, the rest shared with other
            // watchers where they can be.
            let earlier = scan
                .wanted
                .iter()
                .map(|(at, sub, key)| (None, *at, *sub, key));
            let found = found
                .into_iter()
                .map(|(pos, at, sub, key, _)| (pos, at, sub, key));
            let mut events = Vec::new();
            for (pos, at, sub, key) in earlier.chain(found) {
                let mut unshared = usize::MAX;
                let slot = match pos.and_then(|p| p.checked_sub(base)) {
                    Some(at) => {
                        if made.len() <= at {
                            made.resize(at + 1, [usize::MAX; 2]);
                        }
                        &mut made[at][w.req.prev_kv as usize]
                    }
                    None => &mut unshared,
                };
                let filtered = |put: bool| (put && w.req.no_put) || (!put && w.req.no_delete);
                if *slot == usize::MAX {
                    let mut ev = kv.event(at, sub, key);
                    if !w.req.prev_kv {
                        ev.prev = None;
                    }
                    let put = ev.entry.is_some();
                    if filtered(put) {
                        // (Not handed out: a watcher that wants it makes it.)
                        continue;
                    }
                    let create =
                        (ev.entry.as_ref()).is_some_and(|e| e.create_revision == e.mod_revision);
                    *slot = made_kinds.len();
                    made_kinds.push((put, create));
                    made_bytes += ev.bytes();
                    sink(ev);
                } else if filtered(made_kinds[*slot].0) {
                    continue;
                }
                events.push(*slot);
            }
            w.next = upto;
            if w.req.prev_kv {
                // etcd's watch stream reads each event's previous version
                // from the store (a range, counted) unless it created the key.
                counts.ranges += events.iter().filter(|&&i| !made_kinds[i].1).count() as u64;
            }
            // A batch's last part is handed out even with no event, to end it.
            if !events.is_empty() || partial || part.is_some() {
                out.push(WatchEvents {
                    id,
                    events,
                    compact_revision: 0,
                    revision: rev,
                    partial,
                });
            }
        }
        if !cancelled.is_empty() {
            // (Found in id order, so sorted.)
            self.list
                .retain(|(id, _)| cancelled.binary_search(id).is_err());
        }
        out
    }
}
