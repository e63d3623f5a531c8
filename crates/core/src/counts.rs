//! What the lessor has done, counted as etcd 3.4 counts it in its mvcc and
//! lease metrics (`etcd_debugging_mvcc_*_total`,
//! `etcd_debugging_lease_*_total`, `etcd_debugging_server_lease_expired_total`),
//! so a server can report them under etcd's names with etcd's values.
//!
//! etcd counts the reads, puts and deletes made on each of its store
//! transactions when the transaction ends, and one transaction more when it
//! made more than one of them. Its Put and DeleteRange read the key first
//! (a range) when asked for the previous value or to keep the value or
//! lease; a Txn evaluates its compares in a read transaction of their own
//! when it writes; a lease's end deletes its keys one by one in one
//! transaction. [`Tally`] is one such transaction.

/// Totals since the lessor was made (not persisted: etcd's restart at 0 too).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub ranges: u64,
    pub puts: u64,
    pub deletes: u64,
    /// Store transactions that made more than one read, put or delete.
    pub txns: u64,
    /// Bytes of the keys and values put (a kept value counts again).
    pub put_bytes: u64,
    pub granted: u64,
    pub revoked: u64,
    /// Renewals of a live lease.
    pub renewed: u64,
    /// Leases ended by their deadline (also counted in `revoked`).
    pub expired: u64,
    /// Versions compactions dropped (etcd's compaction_keys_total: the
    /// key bucket's records its compactions delete).
    pub compacted: u64,
}

impl Counts {
    /// Every count, in field order: ranges, puts, deletes, txns, put
    /// bytes, granted, revoked, renewed, expired, compacted (the binding's
    /// order).
    pub fn fields(&self) -> [u64; 10] {
        [
            self.ranges,
            self.puts,
            self.deletes,
            self.txns,
            self.put_bytes,
            self.granted,
            self.revoked,
            self.renewed,
            self.expired,
            self.compacted,
        ]
    }
}

/// One store transaction's reads, puts and deletes, counted when it ends.
#[derive(Debug, Default)]
pub struct Tally {
    pub ranges: u64,
    pub puts: u64,
    pub deletes: u64,
    pub put_bytes: u64,
}

impl Tally {
    pub fn put(&mut self, key: &[u8], value: &[u8]) {
        self.puts += 1;
        self.put_bytes += (key.len() + value.len()) as u64;
    }

    /// Folds `other`'s reads, puts and deletes into this transaction.
    pub fn add(&mut self, other: Tally) {
        self.ranges += other.ranges;
        self.puts += other.puts;
        self.deletes += other.deletes;
        self.put_bytes += other.put_bytes;
    }

    /// Adds this transaction to `c`.
    pub fn end(self, c: &mut Counts) {
        if self.ranges + self.puts + self.deletes > 1 {
            c.txns += 1;
        }
        c.ranges += self.ranges;
        c.puts += self.puts;
        c.deletes += self.deletes;
        c.put_bytes += self.put_bytes;
    }
}
