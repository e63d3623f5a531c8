//! The lessor as store entries and back: `restore` rebuilds a lessor from
//! what its store holds, `snapshot` gives everything as the entries a store
//! would hold (to seed a new store or compact a journal).

use crate::config::Config;
use crate::error::{Error, Result};
use crate::lease::{slack_ms, Lease, NOT_STORED};
use crate::lessor::Lessor;
use crate::storage::journal::Journal;
use crate::storage::{codec, decode, Storage, Store};
use crate::text::Text;
use crate::types::{Key, LeaseId};

fn corrupt(key: String, reason: impl Into<String>) -> Error {
    Error::CorruptEntry {
        key,
        reason: reason.into(),
    }
}

impl Lessor {
    /// Rebuilds a lessor from what its storage holds, at host time `now`.
    ///
    /// Stored deadlines trail the real ones by at most half a TTL (renewals
    /// only write when the deadline moved further than that), so each lease's
    /// deadline is the earlier of its stored one plus half its TTL and now
    /// plus its TTL (its holder cannot have renewed after the restart):
    /// never earlier than the holder can expect, and at most half a TTL
    /// later, however often the host restarts (restore itself writes
    /// nothing). `now` must be the same epoch clock the lessor ran on.
    pub fn restore<K: AsRef<str>, V: AsRef<[u8]>>(
        config: Config,
        entries: impl IntoIterator<Item = (K, V)>,
        now: i64,
        storage: Option<Box<dyn Storage>>,
    ) -> Result<Lessor> {
        Lessor::restore_decoded(config, decode::decode(entries)?, now, storage)
    }

    fn restore_decoded(
        config: Config,
        snap: decode::Snapshot,
        now: i64,
        storage: Option<Box<dyn Storage>>,
    ) -> Result<Lessor> {
        let mut l = Lessor::new(config)?;
        let now = l.observe(now);
        l.leases.reserve(snap.leases.len());
        for (id, s) in snap.leases {
            let mut lease = match s.deadline {
                // The holder renewed at the latest just before this restore,
                // so now + TTL is never early either, and often tighter.
                Some(d) => Lease::new(
                    s.ttl,
                    d.saturating_add(slack_ms(s.ttl))
                        .min(now.saturating_add(s.ttl * 1000)),
                    d,
                ),
                None => {
                    let mut lease = Lease::new(s.ttl, 0, NOT_STORED);
                    lease.remaining = s.remaining;
                    lease.deadline = now.saturating_add(lease.remaining_or_ttl());
                    lease
                }
            };
            lease.remaining = s.remaining;
            // A store is a map: a repeated entry means it was not read back
            // whole, and a second copy of a key would attach it to two leases.
            if !l.leases.insert(id, lease, true) {
                return Err(corrupt(codec::lease_key(id), "duplicate entry"));
            }
        }
        // Each key attaches to its lease as it comes, in the store's order
        // (key order: at the end of its lease's sorted list), not in a
        // second pass over the keyspace with a lookup per key. Of the keys
        // whose lease is not stored, the first in key order is named, once
        // no key is duplicated (as the keyspace's own order would).
        let mut missing: Option<(&Key, LeaseId)> = None;
        for (key, entry) in &snap.keys {
            // The entry's stored name only on error: formatting it for every
            // key was a tenth of a restore.
            if entry.mod_revision > snap.revision {
                return Err(corrupt(
                    codec::key_key(key),
                    "mod revision is above the stored revision",
                ));
            }
            if entry.lease != 0
                && !l.leases.attach(entry.lease, key)
                && missing.is_none_or(|(m, _)| key < m)
            {
                missing = Some((key, entry.lease));
            }
        }
        let missing = missing.map(|(key, lease)| (key.clone(), lease));
        if let Err(key) = l.kv.load_live(snap.keys) {
            return Err(corrupt(codec::key_key(&key), "duplicate entry"));
        }
        if let Some((key, lease)) = missing {
            let why = Text::new("lease ").hex(lease as u64).s(" is not stored");
            return Err(corrupt(codec::key_key(&key), why));
        }
        // History may name leases long gone: it is not checked against them.
        for (rev, sub, key, entry) in snap.old {
            let shared = l.kv.key(&key);
            if !l.kv.load_old(rev, sub, shared, entry) {
                return Err(corrupt(codec::old_key(rev, sub, &key), "duplicate entry"));
            }
        }
        // A store written before history was kept has none: it starts here
        // (an empty store has no history to miss).
        let compacted = match (snap.compacted_stored, snap.revision) {
            (true, _) => snap.compacted,
            (false, 1) => -1,
            (false, rev) => rev,
        };
        for (name, value) in snap.host {
            if l.host_entry(&name).is_some() {
                return Err(corrupt(codec::host_key(&name), "duplicate entry"));
            }
            l.host.push((name, value));
        }
        l.kv.loaded(snap.revision, compacted);
        l.history_stored = snap.compacted_stored;
        l.store = Store::new(storage);
        Ok(l)
    }

    /// Everything this lessor would restore from at host time `now`, as
    /// storage entries. Lets a host seed a new store or compact a journal.
    /// Leases past their deadline at `now` (or at the latest time seen, if
    /// later) are left out with their keys, tick or no tick: they are gone
    /// for this lessor, and a restore, which gives a stored deadline up to
    /// half a TTL of slack, would revive them.
    pub fn snapshot(&self, now: i64) -> Vec<(String, Vec<u8>)> {
        let mut all = Vec::with_capacity(1 + self.leases.len() + self.kv.len());
        let mut cursor = self.snapshot_cursor(now);
        while self.snapshot_next(&mut cursor, usize::MAX, &mut all) {}
        all
    }

    /// Starts a snapshot taken in steps (`snapshot_next`) at host time
    /// `now`, so a host can write a large one without stopping for it.
    pub fn snapshot_cursor(&self, now: i64) -> SnapshotCursor {
        SnapshotCursor {
            stage: Stage::Revision,
            // (Time never goes back: an earlier `now` is the latest seen.)
            now: now.max(self.now),
            held: self.leases.held,
            leases: self.leases.iter().map(|(id, _)| id).collect(),
            at: 0,
            after: None,
            part: None,
        }
    }

    /// Appends the snapshot's next entries to `out`, about `max` of them (a
    /// key's versions are not split); false once it is complete.
    ///
    /// Between steps the lessor may change: each entry is as it is when its
    /// step runs, and entries removed meanwhile are left out. Such a
    /// snapshot is fuzzy, not a point in time: with every write made after
    /// the cursor was started applied over it, in order (a store's journal
    /// from then on), it restores the lessor as of the last of them. Each
    /// storage entry appears once; writes replace whole entries. Which
    /// leases are past their deadline is judged at the cursor's start, for
    /// every step: a lease kept keeps its keys, one that expires meanwhile
    /// goes through the journal (its revoke), as in any store.
    pub fn snapshot_next(
        &self,
        c: &mut SnapshotCursor,
        max: usize,
        out: &mut Vec<(String, Vec<u8>)>,
    ) -> bool {
        let (now, held) = (c.now, c.held);
        // Whether a lease is alive, as judged at the cursor's start.
        let alive = |l: &Lease| l.alive(now, held);
        let kept = |lease: LeaseId| lease == 0 || self.leases.get(lease).is_some_and(alive);
        let end = out.len().saturating_add(max.max(1));
        loop {
            if out.len() >= end {
                return true;
            }
            match c.stage {
                Stage::Revision => {
                    out.push((
                        codec::REVISION_KEY.to_string(),
                        codec::encode_revision(self.kv.revision()),
                    ));
                    c.stage = Stage::Leases;
                }
                Stage::Leases => {
                    while out.len() < end && c.at < c.leases.len() {
                        let id = c.leases[c.at];
                        c.at += 1;
                        match self.leases.get(id) {
                            Some(l) if alive(l) => out.push((
                                codec::lease_key(id),
                                codec::encode_lease(&l.stored_record()),
                            )),
                            _ => {}
                        }
                    }
                    if c.at == c.leases.len() {
                        c.leases = Vec::new();
                        c.stage = Stage::Keys;
                    }
                }
                Stage::Keys => {
                    let mut keys = self.kv.keys_after(c.after.as_deref(), c.part.clone());
                    'keys: while out.len() < end {
                        let Some((k, live, versions)) = keys.next() else {
                            c.stage = Stage::Compacted;
                            break;
                        };
                        // A key the last step stopped inside: only its
                        // versions after the last one given (a key created
                        // before it meanwhile comes first, whole).
                        let from = match c.part.take() {
                            Some((pk, rev, sub)) if pk == *k => Some((rev, sub)),
                            Some(p) if *p.0 > **k => {
                                c.part = Some(p);
                                None
                            }
                            _ => None,
                        };
                        let mut last = from.unwrap_or((i64::MIN, 0));
                        if from.is_none() {
                            if let Some(e) = live.filter(|e| kept(e.lease)) {
                                out.push((codec::key_key(k), codec::encode_entry(e)));
                            }
                        }
                        // A key's versions are split over steps too: one
                        // key changed a million times is not one step.
                        for (rev, sub, e) in versions {
                            if out.len() >= end {
                                c.part = Some((k.clone(), last.0, last.1));
                                break 'keys;
                            }
                            out.push((codec::old_key(rev, sub, k), codec::encode_old(e)));
                            last = (rev, sub);
                        }
                        c.after = Some(k.clone());
                    }
                }
                Stage::Compacted => {
                    if self.history_stored {
                        out.push((
                            codec::COMPACTED_KEY.to_string(),
                            codec::encode_revision(self.kv.compacted()),
                        ));
                    }
                    c.stage = Stage::Host;
                }
                Stage::Host => {
                    // (Few and small: all in one step.)
                    for (name, value) in &self.host {
                        out.push((codec::host_key(name), value.clone()));
                    }
                    c.stage = Stage::Done;
                }
                Stage::Done => return false,
            }
        }
    }
}

/// A restore handed its stored entries a few at a time (`add`, then
/// `finish`), where `Lessor::restore` takes them at once: a host reading a
/// large store need not hold every entry in two forms at once. A store
/// that keeps a journal of batches over its entries hands it over first
/// (`journal`).
#[derive(Default)]
pub struct Restore {
    decoder: decode::Decoder,
    journal: Journal,
    added: bool,
}

impl Restore {
    /// One batch (in `Batch::pack_into`'s layout) of the store's journal:
    /// the batches it wrote after the entries it hands over, in order, all
    /// before the first entry. Each record a batch names has the state the
    /// last of them gave it: the entries' copies are left out.
    pub fn journal(&mut self, packed: &[u8]) -> Result<()> {
        if self.added {
            return Err(Error::invalid(
                "a restore's journal comes before its entries",
            ));
        }
        self.journal.apply(packed)
    }

    /// One stored entry; a corrupt one fails here.
    pub fn add(&mut self, key: &str, value: &[u8]) -> Result<()> {
        self.added = true;
        if self.journal.names(key) {
            return Ok(());
        }
        self.decoder.add(key, value)
    }

    /// The lessor of every entry added (`Lessor::restore`).
    pub fn finish(
        self,
        config: Config,
        now: i64,
        storage: Option<Box<dyn Storage>>,
    ) -> Result<Lessor> {
        let Restore {
            mut decoder,
            journal,
            ..
        } = self;
        for (key, value) in journal.into_puts() {
            decoder.add(&key, &value)?;
        }
        Lessor::restore_decoded(config, decoder.finish()?, now, storage)
    }
}

/// Where a snapshot taken in steps is (`Lessor::snapshot_cursor`).
pub struct SnapshotCursor {
    stage: Stage,
    /// The lessor's time at the start, and the start of a hold on expiry
    /// then: what is expired is judged by them, at every step.
    now: i64,
    held: Option<i64>,
    /// The leases there were when it started, and how many are done.
    leases: Vec<LeaseId>,
    at: usize,
    /// The last key done.
    after: Option<Key>,
    /// The key after it, if a step stopped inside its versions, and the
    /// last version given (revision, sub-revision; `i64::MIN`: none yet).
    part: Option<(Key, i64, u32)>,
}

#[derive(Clone, Copy)]
enum Stage {
    Revision,
    Leases,
    Keys,
    Compacted,
    Host,
    Done,
}
