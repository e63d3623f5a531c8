//! The byte format in which etcd-shaped requests and results cross between
//! the binding and its JS half (`js/codec.js` mirrors it): structured data
//! on cold paths in one copy each way, with no JS object built in Rust.
//!
//! Numbers are LEB128 varints (signed ones zigzag-encoded), byte strings a
//! varint length then the bytes, flags one byte of bits. A request is read
//! whole or refused as InvalidArgument (the JS half writes it, so a refusal
//! means a bug there, never a trap here).
//!
//! The varint and byte-string methods are `#[inline(never)]`: inlined into
//! every field of every message they were kilobytes of wasm.

use edge_lease_core::{
    Compare, CompareResult, CompareTarget, DeleteRequest, DeleteResponse, Entry, Error, Event, Key,
    Op, OpResponse, PutOptions, PutRequest, PutResult, RangeRequest, RangeResponse, Result,
    SortOrder, SortTarget, TxnRequest, TxnResponse, WatchEvents, WatchRequest,
};

/// Deeper transactions are refused before the stack could be: past etcd's
/// default --max-txn-ops (128), which refuses deeper ones anyway, and
/// etcd/limits.mjs's MAX_TXN_DEPTH.
const MAX_DEPTH: usize = 256;

pub struct Reader<'a> {
    buf: &'a [u8],
    at: usize,
}

pub(crate) fn bad() -> Error {
    Error::invalid("malformed request from the JS binding")
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Reader<'a> {
        Reader { buf, at: 0 }
    }

    fn byte(&mut self) -> Result<u8> {
        let b = *self.buf.get(self.at).ok_or_else(bad)?;
        self.at += 1;
        Ok(b)
    }

    #[inline(never)]
    fn u64(&mut self) -> Result<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(bad())
    }

    #[inline(never)]
    fn i64(&mut self) -> Result<i64> {
        let v = self.u64()?;
        Ok((v >> 1) as i64 ^ -((v & 1) as i64))
    }

    fn len(&mut self) -> Result<usize> {
        let n = self.u64()?;
        let n = usize::try_from(n).map_err(|_| bad())?;
        if n > self.buf.len() - self.at {
            return Err(bad());
        }
        Ok(n)
    }

    #[inline(never)]
    fn bytes(&mut self) -> Result<Vec<u8>> {
        self.slice().map(<[u8]>::to_vec)
    }

    #[inline(never)]
    fn slice(&mut self) -> Result<&'a [u8]> {
        let n = self.len()?;
        let v = &self.buf[self.at..self.at + n];
        self.at += n;
        Ok(v)
    }

    /// One request read by `read` from the whole of `buf` (bytes left over
    /// are malformed too).
    pub fn whole<T>(buf: &'a [u8], read: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        let mut r = Reader::new(buf);
        let v = read(&mut r)?;
        r.end()?;
        Ok(v)
    }

    /// The request was read to its last byte.
    pub fn end(&self) -> Result<()> {
        if self.at == self.buf.len() {
            Ok(())
        } else {
            Err(bad())
        }
    }

    fn range(&mut self) -> Result<RangeRequest> {
        let key = self.bytes()?;
        let range_end = self.bytes()?;
        let revision = self.i64()?;
        let limit = self.i64()?;
        let sort_order = match self.byte()? {
            0 => SortOrder::None,
            1 => SortOrder::Ascend,
            2 => SortOrder::Descend,
            _ => return Err(bad()),
        };
        let sort_target = match self.byte()? {
            0 => SortTarget::Key,
            1 => SortTarget::Version,
            2 => SortTarget::Create,
            3 => SortTarget::Mod,
            4 => SortTarget::Value,
            _ => return Err(bad()),
        };
        let flags = self.byte()?;
        Ok(RangeRequest {
            key,
            range_end,
            revision,
            limit,
            sort_order,
            sort_target,
            keys_only: flags & 1 != 0,
            count_only: flags & 2 != 0,
            min_mod_revision: self.i64()?,
            max_mod_revision: self.i64()?,
            min_create_revision: self.i64()?,
            max_create_revision: self.i64()?,
        })
    }

    fn put(&mut self) -> Result<PutRequest> {
        let key = self.bytes()?;
        let value = self.bytes()?;
        let lease = self.i64()?;
        let flags = self.byte()?;
        Ok(PutRequest {
            key,
            value,
            options: PutOptions {
                lease,
                prev: flags & 1 != 0,
                ignore_value: flags & 2 != 0,
                ignore_lease: flags & 4 != 0,
                text: flags & 8 != 0,
                if_absent: false,
            },
        })
    }

    fn delete(&mut self) -> Result<DeleteRequest> {
        Ok(DeleteRequest {
            key: self.bytes()?,
            range_end: self.bytes()?,
            prev_kv: self.byte()? != 0,
        })
    }

    fn compare(&mut self) -> Result<Compare> {
        let key = self.bytes()?;
        let range_end = self.bytes()?;
        let target = match self.byte()? {
            0 => CompareTarget::Version(self.i64()?),
            1 => CompareTarget::Create(self.i64()?),
            2 => CompareTarget::Mod(self.i64()?),
            3 => CompareTarget::Value(self.bytes()?),
            4 => CompareTarget::Lease(self.i64()?),
            _ => return Err(bad()),
        };
        let result = match self.byte()? {
            0 => CompareResult::Equal,
            1 => CompareResult::Greater,
            2 => CompareResult::Less,
            3 => CompareResult::NotEqual,
            _ => return Err(bad()),
        };
        Ok(Compare {
            key,
            range_end,
            target,
            result,
        })
    }

    fn ops(&mut self, depth: usize) -> Result<Vec<Op>> {
        let n = self.len()?;
        let mut ops = Vec::with_capacity(n);
        for _ in 0..n {
            ops.push(self.op_at(depth + 1)?);
        }
        Ok(ops)
    }

    /// One request, its kind first (0 range, 1 put, 2 delete, 3 txn): a
    /// KV call's, and each op of a transaction.
    pub fn op(&mut self) -> Result<Op> {
        self.op_at(0)
    }

    /// An op whose transaction, if it is one, is at `depth`.
    fn op_at(&mut self, depth: usize) -> Result<Op> {
        Ok(match self.byte()? {
            0 => Op::Range(self.range()?),
            1 => Op::Put(self.put()?),
            2 => Op::Delete(self.delete()?),
            3 => Op::Txn(self.txn_at(depth)?),
            _ => return Err(bad()),
        })
    }

    fn txn_at(&mut self, depth: usize) -> Result<TxnRequest> {
        if depth > MAX_DEPTH {
            return Err(Error::invalid("transactions nest too deep"));
        }
        let n = self.len()?;
        let mut compare = Vec::with_capacity(n);
        for _ in 0..n {
            compare.push(self.compare()?);
        }
        Ok(TxnRequest {
            compare,
            success: self.ops(depth)?,
            failure: self.ops(depth)?,
        })
    }

    pub fn watch(&mut self) -> Result<WatchRequest> {
        let key = self.bytes()?;
        let range_end = self.bytes()?;
        let start_revision = self.i64()?;
        let flags = self.byte()?;
        Ok(WatchRequest {
            key,
            range_end,
            start_revision,
            prev_kv: flags & 1 != 0,
            no_put: flags & 2 != 0,
            no_delete: flags & 4 != 0,
        })
    }
}

#[derive(Default)]
pub struct Writer(pub Vec<u8>);

impl Writer {
    fn byte(&mut self, b: u8) {
        self.0.push(b);
    }

    #[inline(never)]
    pub(crate) fn u64(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.0.push(v as u8 | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }

    fn i64(&mut self, v: i64) {
        self.u64(((v << 1) ^ (v >> 63)) as u64);
    }

    #[inline(never)]
    fn bytes(&mut self, b: &[u8]) {
        self.u64(b.len() as u64);
        self.0.extend_from_slice(b);
    }

    /// key, value, create, mod, version, lease, text.
    #[inline(never)]
    fn kv(&mut self, key: &[u8], e: &Entry) {
        self.bytes(key);
        self.bytes(&e.value);
        self.i64(e.create_revision);
        self.i64(e.mod_revision);
        self.i64(e.version);
        self.i64(e.lease);
        self.byte(e.text as u8);
    }

    fn kvs(&mut self, kvs: &[(Key, Entry)]) {
        self.u64(kvs.len() as u64);
        for (k, e) in kvs {
            self.kv(k, e);
        }
    }

    fn prev(&mut self, key: &[u8], prev: Option<&Entry>) {
        match prev {
            Some(e) => {
                self.byte(1);
                self.kv(key, e);
            }
            None => self.byte(0),
        }
    }

    fn range(&mut self, r: &RangeResponse) {
        self.i64(r.revision);
        self.i64(r.count);
        self.byte(r.more as u8);
        self.kvs(&r.kvs);
    }

    fn put(&mut self, key: &[u8], r: &PutResult) {
        self.i64(r.revision);
        self.prev(key, r.prev.as_ref());
    }

    fn delete(&mut self, r: &DeleteResponse) {
        self.i64(r.revision);
        self.i64(r.deleted);
        self.kvs(&r.prev_kvs);
    }

    /// Each response follows its op's kind; put responses need the op's key.
    fn txn(&mut self, req: &TxnRequest, r: &TxnResponse) {
        self.i64(r.revision);
        self.byte(r.succeeded as u8);
        let ops = if r.succeeded {
            &req.success
        } else {
            &req.failure
        };
        self.u64(r.responses.len() as u64);
        for (op, resp) in ops.iter().zip(&r.responses) {
            self.byte(match resp {
                OpResponse::Range(_) => 0,
                OpResponse::Put(_) => 1,
                OpResponse::Delete(_) => 2,
                OpResponse::Txn(_) => 3,
            });
            self.response(op, resp);
        }
    }

    /// The response to `op` (of its kind, which is not written).
    pub fn response(&mut self, op: &Op, resp: &OpResponse) {
        match (op, resp) {
            (_, OpResponse::Range(x)) => self.range(x),
            (Op::Put(p), OpResponse::Put(x)) => self.put(&p.key, x),
            (_, OpResponse::Put(x)) => self.put(&[], x),
            (_, OpResponse::Delete(x)) => self.delete(x),
            (Op::Txn(t), OpResponse::Txn(x)) => self.txn(t, x),
            (_, OpResponse::Txn(x)) => self.txn(&TxnRequest::default(), x),
        }
    }

    /// One watch event of a poll (`RawLessor::poll_watches`): 0 and its
    /// kv for a put, 1, its key and revision for a delete; then its
    /// previous kv, if any. An event many watchers get is written once.
    pub fn watch_event(&mut self, ev: &Event) {
        match &ev.entry {
            Some(e) => {
                self.byte(0);
                self.kv(&ev.key, e);
            }
            None => {
                self.byte(1);
                self.bytes(&ev.key);
                self.i64(ev.revision);
            }
        }
        self.prev(&ev.key, ev.prev.as_ref());
    }

    /// A poll's batches: id, compact revision, revision, partial (0/1) and
    /// the numbers of their events (in the order they were written).
    pub fn watch_batches(&mut self, batches: &[WatchEvents]) {
        self.u64(batches.len() as u64);
        for b in batches {
            self.i64(b.id);
            self.i64(b.compact_revision);
            self.i64(b.revision);
            self.byte(b.partial as u8);
            self.u64(b.events.len() as u64);
            for &i in &b.events {
                self.u64(i as u64);
            }
        }
    }
}
