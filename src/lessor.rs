//! The lessor: leases, the keys attached to them, and their expiry.
//!
//! Semantics follow etcd's lessor (server/lease/lessor.go) with these
//! changes, each for a reported problem:
//! - A lease is gone for every read and write the moment its deadline passes,
//!   whether or not `tick` has cleaned it up yet.
//! - `renew` is O(1): it only moves the deadline; the queue catches up lazily.
//! - Time comes from the host, and never goes back: the lessor keeps the
//!   highest time it has seen, so nothing un-expires and nothing expires early.
//! - `demote` checkpoints each lease's remaining time, so a demote/promote
//!   cycle does not reset TTLs.
//! - Promotion pile-ups are spread by a sliding window: at most 3/4 of the
//!   revoke rate fall in any 1 s window, and no lease is ever moved earlier.
//! - Deadlines are persisted (coalesced), so a restart neither resets TTLs nor
//!   keeps an abandoned lease alive: see [`Lessor::restore`].

use std::collections::{HashMap, VecDeque};

use crate::error::{Error, Result};
use crate::expiry::{DeadlineQueue, RateLimiter, WINDOW_MS};
use crate::keyspace::{Entry, Key, Keyspace};
use crate::storage::{self, Batch, Storage, StoredLease};
use crate::{LeaseId, MAX_LEASE_TTL};

/// Deadline of a lease on a standby lessor: it does not expire.
const FOREVER: i64 = i64::MAX;
/// `Lease::queued` when the lease has no entry in the deadline queue.
const NOT_QUEUED: i64 = i64::MIN;
/// `Lease::stored` when the stored record has no deadline (or there is none).
const NOT_STORED: i64 = i64::MIN;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// Shorter TTLs are raised to this (seconds). Default 1.
    pub min_ttl: i64,
    /// At most this many leases expire in any 1 s of host time. Default 1000.
    pub revoke_rate: u32,
    /// Default 4096 bytes.
    pub max_key_bytes: usize,
    /// Default 1 MiB.
    pub max_value_bytes: usize,
    /// Default 10,000.
    pub max_keys_per_lease: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            min_ttl: 1,
            revoke_rate: 1000,
            max_key_bytes: 4096,
            max_value_bytes: 1 << 20,
            max_keys_per_lease: 10_000,
        }
    }
}

impl Config {
    fn validate(&self) -> Result<()> {
        if self.min_ttl < 1 || self.min_ttl > MAX_LEASE_TTL {
            return Err(invalid("min_ttl must be between 1 and 9000000000 seconds"));
        }
        if self.revoke_rate < 1 {
            return Err(invalid("revoke_rate must be at least 1"));
        }
        if self.max_key_bytes < 1 || self.max_keys_per_lease < 1 {
            return Err(invalid("key limits must be at least 1"));
        }
        Ok(())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Granted {
    pub id: LeaseId,
    /// The granted TTL in seconds (after raising to the minimum).
    pub ttl: i64,
}

/// A lease that was revoked or expired, with the keys deleted with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Revoked {
    pub id: LeaseId,
    /// Sorted.
    pub keys: Vec<Key>,
    /// The revision of the deletion, or the unchanged store revision when the
    /// lease had no keys.
    pub revision: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimeToLive {
    pub id: LeaseId,
    /// Remaining whole seconds, truncated as etcd reports them.
    pub ttl: i64,
    pub ttl_ms: i64,
    pub granted_ttl: i64,
    /// Sorted; empty unless asked for.
    pub keys: Vec<Key>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PutOptions {
    /// Attach the key to this lease; 0 detaches it from any lease.
    pub lease: LeaseId,
    /// Create-only: write nothing if the key exists (the lock pattern).
    pub if_absent: bool,
    /// The value is text; hosts give it back as a string.
    pub text: bool,
    /// Return the previous entry.
    pub prev: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PutResult {
    /// The key did not exist before (for `if_absent`: the put happened).
    pub created: bool,
    /// The revision of this change; the unchanged revision if nothing was written.
    pub revision: i64,
    /// The previous entry if asked for, and always the holder's entry when an
    /// `if_absent` put found the key taken.
    pub prev: Option<Entry>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeleteResult {
    pub deleted: bool,
    pub revision: i64,
    pub prev: Option<Entry>,
}

/// What one `tick` did: the leases it expired, and the storage error that
/// stopped it early, if any (the failed lease stays queued).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Tick {
    pub expired: Vec<Revoked>,
    pub error: Option<Error>,
}

struct Lease {
    /// Granted TTL in seconds.
    ttl: i64,
    /// Epoch ms after which the lease is gone; FOREVER on a standby.
    deadline: i64,
    /// The deadline its queue entry carries (never later than `deadline`).
    queued: i64,
    /// The deadline in its stored record.
    stored: i64,
    /// Checkpointed remaining ms for the next promotion; 0 if none.
    remaining: i64,
    /// Attached keys, sorted.
    keys: Vec<Key>,
}

impl Lease {
    /// The record as storage holds it: the deadline last written (restore
    /// adds the slack to it), not the live one, also while on a standby.
    fn stored_record(&self) -> StoredLease {
        StoredLease {
            ttl: self.ttl,
            deadline: (self.stored != NOT_STORED).then_some(self.stored),
            remaining: self.remaining,
        }
    }

    /// Whether moving this lease's deadline to `deadline` leaves the stored
    /// one too early to recover from (see `restore`), so it must be written.
    fn needs_persist(&self, deadline: i64) -> bool {
        deadline > self.stored.saturating_add(slack_ms(self.ttl))
    }
}

/// How far a stored deadline may trail the real one. Restore adds it back, so
/// a lease is never early after a restart and at most this late.
fn slack_ms(ttl: i64) -> i64 {
    ttl.saturating_mul(500)
}

/// splitmix64: a small, fast generator with a full 2^64 period, so ids from
/// one seed never repeat before the collision check matters.
struct IdGen(u64);

impl IdGen {
    fn seeded() -> IdGen {
        // Without an entropy source ids are still distinct, just predictable.
        IdGen(getrandom::u64().unwrap_or(0x853c_49e6_748f_ea9b))
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

fn duplicate(key: String) -> Error {
    Error::CorruptEntry {
        key,
        reason: "duplicate entry".into(),
    }
}

fn invalid(why: impl Into<String>) -> Error {
    Error::InvalidArgument(why.into())
}

type LeaseMap = HashMap<LeaseId, Lease, foldhash::fast::RandomState>;

pub struct Lessor {
    config: Config,
    leases: LeaseMap,
    keys: Keyspace,
    queue: DeadlineQueue,
    limiter: RateLimiter,
    primary: bool,
    /// The highest host time seen.
    now: i64,
    storage: Option<Box<dyn Storage>>,
    /// Leases expired outside `tick` (a grant reusing an expired id), for the
    /// next `tick` to report.
    outbox: Vec<Revoked>,
    ids: IdGen,
}

impl Lessor {
    pub fn new(config: Config) -> Result<Lessor> {
        config.validate()?;
        Ok(Lessor {
            limiter: RateLimiter::new(config.revoke_rate),
            config,
            leases: LeaseMap::default(),
            keys: Keyspace::default(),
            queue: DeadlineQueue::default(),
            primary: true,
            now: i64::MIN,
            storage: None,
            outbox: Vec::new(),
            ids: IdGen::seeded(),
        })
    }

    /// A lessor whose every change is first written to `storage`.
    pub fn with_storage(config: Config, storage: Box<dyn Storage>) -> Result<Lessor> {
        let mut l = Lessor::new(config)?;
        l.storage = Some(storage);
        Ok(l)
    }

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
        let snap = storage::decode(entries)?;
        let mut l = Lessor::new(config)?;
        let now = l.observe(now);
        l.keys.set_revision(snap.revision);
        for (id, s) in snap.leases {
            let (deadline, stored) = match s.deadline {
                // The holder renewed at the latest just before this restore,
                // so now + TTL is never early either, and often tighter.
                Some(d) => (
                    d.saturating_add(slack_ms(s.ttl))
                        .min(now.saturating_add(s.ttl * 1000)),
                    d,
                ),
                None => {
                    let rem = if s.remaining > 0 {
                        s.remaining
                    } else {
                        s.ttl * 1000
                    };
                    (now.saturating_add(rem), NOT_STORED)
                }
            };
            let lease = Lease {
                ttl: s.ttl,
                deadline,
                queued: deadline,
                stored,
                remaining: s.remaining,
                keys: Vec::new(),
            };
            // A store is a map: a repeated entry means it was not read back
            // whole, and a second copy of a key would attach it to two leases.
            if l.leases.insert(id, lease).is_some() {
                return Err(duplicate(storage::lease_key(id)));
            }
            l.queue.push(deadline, id);
        }
        for (key, entry) in snap.keys {
            let name = storage::key_key(&key);
            if l.keys.get(&key).is_some() {
                return Err(duplicate(name));
            }
            let key: Key = key.into();
            if entry.mod_revision > snap.revision {
                return Err(Error::CorruptEntry {
                    key: name,
                    reason: "mod revision is above the stored revision".into(),
                });
            }
            if entry.lease != 0 {
                let Some(lease) = l.leases.get_mut(&entry.lease) else {
                    return Err(Error::CorruptEntry {
                        key: name,
                        reason: format!("lease {:016x} is not stored", entry.lease as u64),
                    });
                };
                lease.keys.push(key.clone());
            }
            l.keys.insert(key, entry);
        }
        for lease in l.leases.values_mut() {
            lease.keys.sort_unstable();
        }
        l.storage = storage;
        Ok(l)
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    pub fn is_primary(&self) -> bool {
        self.primary
    }

    /// The revision of the last change to the keyspace.
    pub fn revision(&self) -> i64 {
        self.keys.revision()
    }

    /// Number of leases held, including expired ones not yet cleaned up.
    pub fn lease_count(&self) -> usize {
        self.leases.len()
    }

    /// Number of keys held, including those of expired leases not yet cleaned up.
    pub fn key_count(&self) -> usize {
        self.keys.len()
    }

    /// Records the host's time; returns the lessor's time, which never goes back.
    fn observe(&mut self, now: i64) -> i64 {
        if now > self.now {
            self.now = now;
        }
        self.now
    }

    fn lease_live(&self, id: LeaseId, now: i64) -> bool {
        self.leases.get(&id).is_some_and(|l| l.deadline > now)
    }

    fn entry_live(&self, e: &Entry, now: i64) -> bool {
        e.lease == 0 || self.lease_live(e.lease, now)
    }

    /// Hands one batch to storage, if there is one. `build` sees the state
    /// before the change; the caller applies the change only on success.
    fn write(&mut self, build: impl FnOnce(&Self, &mut Batch)) -> Result<()> {
        let Some(mut s) = self.storage.take() else {
            return Ok(());
        };
        let mut batch = Batch::default();
        build(self, &mut batch);
        let res = if batch.is_empty() {
            Ok(())
        } else {
            s.write(&batch)
        };
        self.storage = Some(s);
        res.map_err(Error::StorageFailed)
    }

    /// A random positive 63-bit id no live lease has. The generator is
    /// seeded once from the OS (getrandom): one entropy call per grant would
    /// cost more than the grant itself (a JS crypto call in wasm).
    /// Writes one lease record, as its own batch.
    fn write_lease(&mut self, id: LeaseId, rec: &StoredLease) -> Result<()> {
        self.write(|_, b| {
            b.put
                .push((storage::lease_key(id), storage::encode_lease(rec)))
        })
    }

    fn fresh_id(&mut self) -> LeaseId {
        loop {
            let id = (self.ids.next() >> 1) as i64;
            if id != 0 && !self.leases.contains_key(&id) {
                return id;
            }
        }
    }

    fn check_key(&self, key: &[u8]) -> Result<()> {
        if key.is_empty() {
            return Err(invalid("key must not be empty"));
        }
        if key.len() > self.config.max_key_bytes {
            return Err(invalid(format!(
                "key is {} bytes, the limit is {}",
                key.len(),
                self.config.max_key_bytes
            )));
        }
        Ok(())
    }

    /// Grants a lease. `id` 0 picks a random positive id. TTLs below the
    /// minimum (0 and negative included) are raised to it.
    pub fn grant(&mut self, now: i64, ttl: i64, id: LeaseId) -> Result<Granted> {
        let now = self.observe(now);
        if ttl > MAX_LEASE_TTL {
            return Err(Error::LeaseTtlTooLarge(ttl));
        }
        let ttl = ttl.max(self.config.min_ttl);
        let id = if id == 0 {
            self.fresh_id()
        } else {
            if let Some(old) = self.leases.get(&id) {
                if old.deadline > now {
                    return Err(Error::LeaseExists(id));
                }
                // Expired but not cleaned up yet: finish its expiry first, as
                // its own change, so the new lease starts with no keys.
                let expired = self.remove_lease(id)?;
                self.outbox.push(expired);
            }
            id
        };
        let deadline = if self.primary {
            now.saturating_add(ttl * 1000)
        } else {
            FOREVER
        };
        let lease = Lease {
            ttl,
            deadline,
            queued: NOT_QUEUED,
            // Stored with a deadline even on a standby: restore always makes
            // a primary, and a record without one would get a fresh TTL on
            // every restart (an abandoned lease kept alive forever).
            stored: now.saturating_add(ttl * 1000),
            remaining: 0,
            keys: Vec::new(),
        };
        self.write_lease(id, &lease.stored_record())?;
        self.insert_lease(id, lease);
        Ok(Granted { id, ttl })
    }

    fn insert_lease(&mut self, id: LeaseId, mut lease: Lease) {
        if self.primary {
            lease.queued = lease.deadline;
            self.queue.push(lease.deadline, id);
        }
        self.leases.insert(id, lease);
    }

    /// Renews a lease: its deadline becomes now + its TTL. Returns the TTL.
    pub fn renew(&mut self, now: i64, id: LeaseId) -> Result<i64> {
        let now = self.observe(now);
        if !self.primary {
            return Err(Error::NotPrimary);
        }
        let Some(l) = self.leases.get(&id).filter(|l| l.deadline > now) else {
            return Err(Error::LeaseNotFound(id));
        };
        let deadline = now.saturating_add(l.ttl * 1000);
        let ttl = l.ttl;
        // Coalesced persistence: write only when the stored deadline would
        // trail the new one by more than the slack restore adds back.
        let persist = self.storage.is_some() && (l.needs_persist(deadline) || l.remaining != 0);
        if persist {
            let rec = StoredLease {
                ttl,
                deadline: Some(deadline),
                remaining: 0,
            };
            self.write_lease(id, &rec)?;
        }
        if let Some(l) = self.leases.get_mut(&id) {
            l.deadline = deadline;
            l.remaining = 0;
            if persist {
                l.stored = deadline;
            }
            if deadline < l.queued {
                // A promotion's extension made the queued deadline later than
                // this renewal's: queue again (the old entry is skipped).
                l.queued = deadline;
                self.queue.push(deadline, id);
            }
        }
        Ok(ttl)
    }

    /// Revokes a live lease and deletes its keys in one change.
    pub fn revoke(&mut self, now: i64, id: LeaseId) -> Result<Revoked> {
        let now = self.observe(now);
        if !self.lease_live(id, now) {
            return Err(Error::LeaseNotFound(id));
        }
        self.remove_lease(id)
    }

    /// The one path by which a lease ends (revoke and expiry): its keys go in
    /// one revision, in sorted order, then the lease.
    fn remove_lease(&mut self, id: LeaseId) -> Result<Revoked> {
        let Some(l) = self.leases.get(&id) else {
            return Err(Error::LeaseNotFound(id));
        };
        let bump = !l.keys.is_empty();
        let revision = self.keys.revision() + bump as i64;
        self.write(|s, b| {
            if let Some(l) = s.leases.get(&id) {
                b.delete.extend(l.keys.iter().map(|k| storage::key_key(k)));
            }
            b.delete.push(storage::lease_key(id));
            if bump {
                b.put.push((
                    storage::REVISION_KEY.to_string(),
                    storage::encode_revision(revision),
                ));
            }
        })?;
        let Some(l) = self.leases.remove(&id) else {
            return Err(Error::LeaseNotFound(id));
        };
        if bump {
            self.keys.next_revision();
            for k in &l.keys {
                self.keys.remove(k);
            }
        }
        // Revoked leases leave their queue entries behind (skipped when
        // popped); rebuild when they outnumber the live ones.
        if self.primary && self.queue.len() > 2 * self.leases.len() + 64 {
            self.rebuild_queue();
        }
        Ok(Revoked {
            id,
            keys: l.keys,
            revision,
        })
    }

    fn rebuild_queue(&mut self) {
        self.queue.clear();
        for (&id, l) in self.leases.iter_mut() {
            l.queued = l.deadline;
            self.queue.push(l.deadline, id);
        }
        self.queue.shrink_to_fit();
    }

    /// Remaining time of a live lease, and optionally its keys.
    pub fn time_to_live(&mut self, now: i64, id: LeaseId, with_keys: bool) -> Result<TimeToLive> {
        let now = self.observe(now);
        let Some(l) = self.leases.get(&id).filter(|l| l.deadline > now) else {
            return Err(Error::LeaseNotFound(id));
        };
        let ttl_ms = if l.deadline == FOREVER {
            // Standby: report what a promotion would start from.
            if l.remaining > 0 {
                l.remaining
            } else {
                l.ttl * 1000
            }
        } else {
            l.deadline.saturating_sub(now)
        };
        Ok(TimeToLive {
            id,
            ttl: ttl_ms / 1000,
            ttl_ms,
            granted_ttl: l.ttl,
            keys: if with_keys {
                l.keys.clone()
            } else {
                Vec::new()
            },
        })
    }

    /// Live lease ids, soonest deadline first (ties by id).
    pub fn leases(&mut self, now: i64) -> Vec<LeaseId> {
        let now = self.observe(now);
        let mut v: Vec<(i64, LeaseId)> = self
            .leases
            .iter()
            .filter(|(_, l)| l.deadline > now)
            .map(|(&id, l)| (l.deadline, id))
            .collect();
        v.sort_unstable();
        v.into_iter().map(|(_, id)| id).collect()
    }

    /// Writes a key. See [`PutOptions`].
    pub fn put(
        &mut self,
        now: i64,
        key: &[u8],
        value: &[u8],
        opts: PutOptions,
    ) -> Result<PutResult> {
        let now = self.observe(now);
        self.check_key(key)?;
        if value.len() > self.config.max_value_bytes {
            return Err(invalid(format!(
                "value is {} bytes, the limit is {}",
                value.len(),
                self.config.max_value_bytes
            )));
        }
        if opts.text && std::str::from_utf8(value).is_err() {
            return Err(invalid("text value is not UTF-8"));
        }
        if opts.lease != 0 {
            let Some(l) = self.leases.get(&opts.lease).filter(|l| l.deadline > now) else {
                return Err(Error::LeaseNotFound(opts.lease));
            };
            if l.keys.len() >= self.config.max_keys_per_lease
                && l.keys.binary_search_by(|k| (**k).cmp(key)).is_err()
            {
                return Err(invalid(format!(
                    "lease {:016x} already has {} keys, the limit",
                    opts.lease as u64,
                    l.keys.len()
                )));
            }
        }
        let existing = self.keys.get(key);
        let live = existing.filter(|e| self.entry_live(e, now));
        if opts.if_absent {
            if let Some(holder) = live {
                return Ok(PutResult {
                    created: false,
                    revision: self.keys.revision(),
                    prev: Some(holder.clone()),
                });
            }
        }
        let revision = self.keys.revision() + 1;
        let (create_revision, version) = match live {
            Some(e) => (e.create_revision, e.version + 1),
            None => (revision, 1),
        };
        let created = live.is_none();
        let old_lease = existing.map_or(0, |e| e.lease);
        let prev = if opts.prev { live.cloned() } else { None };
        let entry = Entry {
            value: value.into(),
            text: opts.text,
            create_revision,
            mod_revision: revision,
            version,
            lease: opts.lease,
        };
        self.write(|_, b| {
            b.put
                .push((storage::key_key(key), storage::encode_entry(&entry)));
            b.put.push((
                storage::REVISION_KEY.to_string(),
                storage::encode_revision(revision),
            ));
        })?;
        self.keys.next_revision();
        let shared: Key = match self.keys.get_key_value(key) {
            Some((k, _)) => k.clone(),
            None => key.into(),
        };
        if old_lease != opts.lease {
            // Moving between leases (etcd's lease switch); an expired holder
            // loses the key to this write.
            self.detach(old_lease, key);
            self.attach(opts.lease, &shared);
        }
        self.keys.insert(shared, entry);
        Ok(PutResult {
            created,
            revision,
            prev,
        })
    }

    fn attach(&mut self, id: LeaseId, key: &Key) {
        if let Some(l) = self.leases.get_mut(&id) {
            if let Err(at) = l.keys.binary_search(key) {
                // Most leases hold one key or a few: grow by one at first
                // instead of Vec's default of four.
                if l.keys.len() < 4 {
                    l.keys.reserve_exact(1);
                }
                l.keys.insert(at, key.clone());
            }
        }
    }

    fn detach(&mut self, id: LeaseId, key: &[u8]) {
        if let Some(l) = self.leases.get_mut(&id) {
            if let Ok(at) = l.keys.binary_search_by(|k| (**k).cmp(key)) {
                l.keys.remove(at);
            }
        }
    }

    /// A live key's entry.
    pub fn get(&mut self, now: i64, key: &[u8]) -> Option<&Entry> {
        let now = self.observe(now);
        let this = &*self;
        this.keys.get(key).filter(|e| this.entry_live(e, now))
    }

    /// Live keys starting with `prefix` (all keys for an empty prefix), sorted.
    pub fn range<'a>(&'a mut self, now: i64, prefix: &'a [u8]) -> Vec<(&'a [u8], &'a Entry)> {
        let now = self.observe(now);
        let this = &*self;
        this.keys
            .prefix(prefix)
            .filter(|(_, e)| this.entry_live(e, now))
            .collect()
    }

    /// Deletes a live key (detaching it from its lease).
    pub fn delete(&mut self, now: i64, key: &[u8], want_prev: bool) -> Result<DeleteResult> {
        let now = self.observe(now);
        self.check_key(key)?;
        let Some(e) = self.keys.get(key).filter(|e| self.entry_live(e, now)) else {
            return Ok(DeleteResult {
                deleted: false,
                revision: self.keys.revision(),
                prev: None,
            });
        };
        let lease = e.lease;
        let revision = self.keys.revision() + 1;
        self.write(|_, b| {
            b.delete.push(storage::key_key(key));
            b.put.push((
                storage::REVISION_KEY.to_string(),
                storage::encode_revision(revision),
            ));
        })?;
        self.keys.next_revision();
        let prev = self.keys.remove(key);
        self.detach(lease, key);
        Ok(DeleteResult {
            deleted: true,
            revision,
            prev: if want_prev { prev } else { None },
        })
    }

    /// Expires what is due, at most `revoke_rate` leases in any 1 s of host
    /// time; the rest stay queued. Cheap when nothing is due.
    pub fn tick(&mut self, now: i64) -> Tick {
        let now = self.observe(now);
        let mut tick = Tick {
            expired: std::mem::take(&mut self.outbox),
            error: None,
        };
        if !self.primary {
            return tick;
        }
        while let Some((d, id)) = self.queue.peek() {
            if d > now {
                break;
            }
            let Some(l) = self.leases.get_mut(&id).filter(|l| l.queued == d) else {
                self.queue.pop(); // revoked, or an old incarnation of the id
                continue;
            };
            if l.deadline > now {
                // Renewed since it was queued: catch up now.
                l.queued = l.deadline;
                let nd = l.deadline;
                self.queue.pop();
                self.queue.push(nd, id);
                continue;
            }
            if self.limiter.allowance(now) == 0 {
                break;
            }
            match self.remove_lease(id) {
                Ok(r) => {
                    self.limiter.record(now);
                    tick.expired.push(r);
                }
                Err(e) => {
                    tick.error = Some(e);
                    break;
                }
            }
        }
        tick
    }

    /// The earliest host time at which `tick` has work, or None.
    pub fn next_deadline(&mut self) -> Option<i64> {
        if !self.outbox.is_empty() {
            return Some(self.now);
        }
        if !self.primary {
            return None;
        }
        while let Some((d, id)) = self.queue.peek() {
            match self.leases.get_mut(&id).filter(|l| l.queued == d) {
                None => {
                    self.queue.pop();
                }
                Some(l) if l.deadline > d => {
                    l.queued = l.deadline;
                    let nd = l.deadline;
                    self.queue.pop();
                    self.queue.push(nd, id);
                }
                Some(_) => return Some(d.max(self.limiter.next_allowed(self.now))),
            }
        }
        None
    }

    /// Makes this lessor primary: every live lease's deadline becomes
    /// now + extend + its remaining time (its checkpoint if any, else its TTL),
    /// then pile-ups are spread so that at most 3/4 of the revoke rate expire
    /// in any 1 s window. Leases already past their deadline stay expired.
    pub fn promote(&mut self, now: i64, extend_ms: i64) -> Result<()> {
        let now = self.observe(now);
        if extend_ms < 0 {
            return Err(invalid("extend must not be negative"));
        }
        let mut plan: Vec<(i64, LeaseId)> = self
            .leases
            .iter()
            .filter(|(_, l)| l.deadline > now)
            .map(|(&id, l)| {
                let rem = if l.remaining > 0 {
                    l.remaining
                } else {
                    l.ttl * 1000
                };
                (now.saturating_add(extend_ms).saturating_add(rem), id)
            })
            .collect();
        let rate = self.config.revoke_rate as usize;
        if plan.len() >= rate {
            spread(&mut plan, (rate / 4 * 3 + rate % 4 * 3 / 4).max(1));
        }
        self.write(|s, b| {
            for &(d, id) in &plan {
                if let Some(l) = s.leases.get(&id) {
                    if l.needs_persist(d) {
                        let mut rec = l.stored_record();
                        rec.deadline = Some(d);
                        b.put
                            .push((storage::lease_key(id), storage::encode_lease(&rec)));
                    }
                }
            }
        })?;
        let stored_too = self.storage.is_some();
        for (d, id) in plan {
            if let Some(l) = self.leases.get_mut(&id) {
                if stored_too && l.needs_persist(d) {
                    l.stored = d;
                }
                l.deadline = d;
            }
        }
        self.primary = true;
        self.rebuild_queue();
        Ok(())
    }

    /// Makes this lessor a standby: leases stop expiring and `renew` fails
    /// with NotPrimary. Each live lease's remaining time is checkpointed so
    /// that the next promotion resumes it instead of restarting its TTL.
    pub fn demote(&mut self, now: i64) {
        let now = self.observe(now);
        if !self.primary {
            return;
        }
        for l in self.leases.values_mut() {
            if l.deadline > now {
                l.remaining = l.deadline.saturating_sub(now);
                l.deadline = FOREVER;
            }
            l.queued = NOT_QUEUED;
        }
        self.queue.clear();
        self.primary = false;
    }

    /// Records a lease's remaining time (etcd's lease checkpoint), used by the
    /// next promotion instead of the full TTL.
    pub fn checkpoint(&mut self, now: i64, id: LeaseId, remaining_ms: i64) -> Result<()> {
        let now = self.observe(now);
        if remaining_ms < 0 {
            return Err(invalid("remaining must not be negative"));
        }
        let Some(l) = self.leases.get(&id).filter(|l| l.deadline > now) else {
            return Err(Error::LeaseNotFound(id));
        };
        // The stored deadline, not the live one: writing the live one would
        // let each restart + checkpoint push an abandoned lease TTL/2 later.
        let mut rec = l.stored_record();
        rec.remaining = remaining_ms;
        self.write_lease(id, &rec)?;
        if let Some(l) = self.leases.get_mut(&id) {
            l.remaining = remaining_ms;
        }
        Ok(())
    }

    /// Everything this lessor would restore from, as storage entries. Lets a
    /// host seed a new store or compact a journal.
    pub fn snapshot(&self) -> Vec<(String, Vec<u8>)> {
        let mut out = Vec::with_capacity(1 + self.leases.len() + self.keys.len());
        out.push((
            storage::REVISION_KEY.to_string(),
            storage::encode_revision(self.keys.revision()),
        ));
        for (&id, l) in &self.leases {
            out.push((
                storage::lease_key(id),
                storage::encode_lease(&l.stored_record()),
            ));
        }
        for (k, e) in self.keys.iter() {
            out.push((storage::key_key(k), storage::encode_entry(e)));
        }
        out
    }
}

/// Delays deadlines (sorted here) so that no `per_window + 1` of them fall in
/// one window of 1000 ms: each is moved to the earliest time that keeps the
/// window before it under the limit, and never earlier than it was.
fn spread(plan: &mut [(i64, LeaseId)], per_window: usize) {
    plan.sort_unstable();
    let mut recent: VecDeque<i64> = VecDeque::with_capacity(per_window + 1);
    for slot in plan.iter_mut() {
        let mut d = slot.0;
        if recent.len() == per_window {
            if let Some(&oldest) = recent.front() {
                d = d.max(oldest.saturating_add(WINDOW_MS));
            }
            recent.pop_front();
        }
        recent.push_back(d);
        slot.0 = d;
    }
}
