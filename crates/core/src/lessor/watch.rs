//! The lessor's watchers (`crate::watch`), over its keyspace's log.

use crate::error::Result;
use crate::kv::Event;
use crate::lessor::Lessor;
use crate::watch::{Polled, WatchEvents, WatchRequest};

impl Lessor {
    /// Starts a watcher; returns its id (unique in this lessor).
    pub fn watch(&mut self, req: &WatchRequest) -> Result<i64> {
        self.config.check_query_key(&req.key)?;
        self.watchers.add(req, self.kv.revision())
    }

    /// Stops a watcher; false if there was none with that id.
    pub fn cancel_watch(&mut self, id: i64) -> bool {
        self.watchers.cancel(id)
    }

    /// Leaves a watcher out of polls (`paused`) or takes it back, where it
    /// was; false if there is none with that id. History it still needs is
    /// kept meanwhile.
    pub fn pause_watch(&mut self, id: i64, paused: bool) -> bool {
        self.watchers.pause(id, paused)
    }

    /// Whether a watcher has been given every change so far (false while
    /// it catches up on history, or if there is none with that id).
    pub fn watch_caught_up(&self, id: i64) -> bool {
        self.watchers.caught_up(id, self.kv.revision())
    }

    /// Whether some watcher that is not paused has changes it has not been
    /// given.
    pub fn watches_pending(&self) -> bool {
        self.watchers.pending(self.kv.revision())
    }

    /// The changes each watcher has not been given yet (at most 1000
    /// revisions with changes in its range each, as etcd batches them;
    /// `watches_pending` says whether more remain).
    /// A watcher whose next revision was compacted is cancelled.
    pub fn poll_watches(&mut self) -> Polled {
        self.watchers.poll(&self.kv, &mut self.counts)
    }

    /// As `poll_watches`, each event handed to `sink` as it is made
    /// (numbered from 0 in that order), the batches returned: a watcher
    /// catching up on a long history is not held in memory twice.
    pub fn poll_watches_into(&mut self, sink: &mut dyn FnMut(Event)) -> Vec<WatchEvents> {
        self.watchers.poll_into(&self.kv, &mut self.counts, sink)
    }
}
