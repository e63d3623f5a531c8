//! Watchers: who wants the changes of which keys from which revision on.
//! The keyspace's log is the source: `poll_watches` hands each watcher the
//! changes it has not seen, so a watcher that starts in the past catches up
//! from history and one that is current gets each commit's changes. A host
//! polls after every write; automatic compaction never drops changes a
//! watcher has not been given.

mod poll;

use crate::error::{Error, Result};
use crate::kv::{Bound, Event};
use poll::Scan;

/// etcd's WatchCreateRequest, as the core needs it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WatchRequest {
    pub key: Vec<u8>,
    /// As in `RangeRequest`: empty for the key alone, `[0]` for all from `key`.
    pub range_end: Vec<u8>,
    /// The first revision to report; 0 for changes after the current one.
    pub start_revision: i64,
    /// Give each event the key's previous entry.
    pub prev_kv: bool,
    /// Leave out puts (etcd's NOPUT filter).
    pub no_put: bool,
    /// Leave out deletes (etcd's NODELETE filter).
    pub no_delete: bool,
}

/// What one poll hands out: each event once, however many watchers get it
/// (a change many watchers see is built and encoded once).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Polled {
    pub events: Vec<Event>,
    pub batches: Vec<WatchEvents>,
}

impl Polled {
    /// A batch's events.
    pub fn events_of<'a>(&'a self, b: &'a WatchEvents) -> impl Iterator<Item = &'a Event> + 'a {
        b.events.iter().map(|&i| &self.events[i])
    }
}

/// What one poll has for one watcher.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchEvents {
    pub id: i64,
    /// Indexes into `Polled::events`, in revision order; may be empty when
    /// `compact_revision` is set.
    pub events: Vec<usize>,
    /// Set when the watcher wanted changes from before the compaction
    /// point: it is cancelled, and this is that point (etcd's
    /// compact_revision).
    pub compact_revision: i64,
    /// The store's revision at the poll.
    pub revision: i64,
    /// The batch goes on at the next poll: its last revision had more
    /// events than a poll hands one watcher (PART_EVENTS). The host joins
    /// the parts (a revision's events are one batch, as etcd sends them).
    pub partial: bool,
}

struct Watcher {
    req: WatchRequest,
    /// The next revision to report.
    next: i64,
    /// A batch being found over several polls (far behind, sparse in its
    /// range): `next` stays at its start until it is handed out.
    scan: Option<Scan>,
    /// Left out of polls until resumed (its host cannot take more now);
    /// where it is, its search included, is kept.
    paused: bool,
    /// Set when a part of a batch was handed out (`WatchEvents::partial`):
    /// the sub-revision of `next` to go on from, and the revisions the
    /// batch counted so far (`next` among them).
    part: Option<(u32, usize)>,
}

impl Watcher {
    fn wants(&self, key: &[u8]) -> bool {
        match Bound::of(&self.req.range_end) {
            None => key == &self.req.key[..],
            Some(end) => key >= &self.req.key[..] && end.admits(key),
        }
    }
}

#[derive(Default)]
pub struct Watchers {
    /// By id, ascending: ids only grow, so a new one goes last. (A list,
    /// not an ordered map: each instance of a map is kilobytes of wasm.)
    list: Vec<(i64, Watcher)>,
    next_id: i64,
}

impl Watchers {
    /// The newest revision a compaction may take while watchers wait: one
    /// before the oldest some watcher still has to be given, since a
    /// compaction drops what a watch from its own revision does not see
    /// (a deletion there, a version a later change of that revision
    /// replaced), and that watcher needs those.
    #[inline(never)]
    pub fn oldest_wanted(&self) -> Option<i64> {
        self.list.iter().map(|(_, w)| w.next - 1).min()
    }

    fn find(&self, id: i64) -> Option<usize> {
        self.list.binary_search_by_key(&id, |(id, _)| *id).ok()
    }

    fn get_mut(&mut self, id: i64) -> Option<&mut Watcher> {
        let i = self.find(id)?;
        Some(&mut self.list[i].1)
    }
}

impl Watchers {
    /// Starts a watcher at `revision`, the current one (`Lessor::watch`).
    pub fn add(&mut self, req: &WatchRequest, revision: i64) -> Result<i64> {
        if let Some(Bound::Excluded(end)) = Bound::of(&req.range_end) {
            if end <= &req.key[..] {
                return Err(Error::invalid("watch range is empty"));
            }
        }
        let next = if req.start_revision > 0 {
            req.start_revision
        } else {
            revision + 1
        };
        let w = self;
        w.next_id += 1;
        let id = w.next_id;
        w.list.push((
            id,
            Watcher {
                req: req.clone(),
                next,
                scan: None,
                paused: false,
                part: None,
            },
        ));
        Ok(id)
    }

    /// `Lessor::cancel_watch`.
    pub fn cancel(&mut self, id: i64) -> bool {
        self.find(id).map(|i| self.list.remove(i)).is_some()
    }

    /// `Lessor::pause_watch`.
    pub fn pause(&mut self, id: i64, paused: bool) -> bool {
        self.get_mut(id).map(|w| w.paused = paused).is_some()
    }

    /// `Lessor::watch_caught_up`, at the current revision `rev`.
    pub fn caught_up(&self, id: i64, rev: i64) -> bool {
        self.find(id).is_some_and(|i| self.list[i].1.next > rev)
    }

    /// `Lessor::watches_pending`, at the current revision `rev`.
    pub fn pending(&self, rev: i64) -> bool {
        self.list.iter().any(|(_, w)| !w.paused && w.next <= rev)
    }
}
