//! Range reads with etcd's options: which keys (`key`, `range_end`), as of
//! which revision, filtered, sorted and limited as etcd's Range does.

use std::ops::Bound as B;

use super::{Entry, Key};

/// The end of a key range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound<'a> {
    /// Up to this key, excluded.
    Excluded(&'a [u8]),
    /// Every key from the start on.
    Unbounded,
}

impl<'a> Bound<'a> {
    /// etcd's `range_end`: empty means the key alone (`None` here), `\0`
    /// means every key from the start on, anything else is excluded.
    pub fn of(range_end: &'a [u8]) -> Option<Bound<'a>> {
        match range_end {
            [] => None,
            [0] => Some(Bound::Unbounded),
            end => Some(Bound::Excluded(end)),
        }
    }

    /// The std bounds from `from` to this end; an end at or before `from`
    /// gives an empty range (std's `range` would panic on it).
    pub(crate) fn from(self, from: &'a [u8]) -> (B<&'a [u8]>, B<&'a [u8]>) {
        match self {
            Bound::Excluded(end) if end > from => (B::Included(from), B::Excluded(end)),
            Bound::Excluded(_) => (B::Included(from), B::Excluded(from)),
            Bound::Unbounded => (B::Included(from), B::Unbounded),
        }
    }

    /// Whether `key` is before this end.
    pub fn admits(self, key: &[u8]) -> bool {
        match self {
            Bound::Excluded(end) => key < end,
            Bound::Unbounded => true,
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SortOrder {
    #[default]
    None,
    Ascend,
    Descend,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SortTarget {
    #[default]
    Key,
    Version,
    Create,
    Mod,
    Value,
}

/// etcd's RangeRequest.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RangeRequest {
    pub key: Vec<u8>,
    /// Empty: `key` alone; `[0]`: every key from `key` on; else `[key, range_end)`.
    pub range_end: Vec<u8>,
    /// Read as of this revision; 0 (or less) for the current one.
    pub revision: i64,
    /// At most this many entries (0: no limit); `more` says if there were others.
    pub limit: i64,
    pub sort_order: SortOrder,
    pub sort_target: SortTarget,
    pub keys_only: bool,
    /// Only `count`, no entries.
    pub count_only: bool,
    /// Filters (0: none): keep entries whose revisions lie in these bounds.
    pub min_mod_revision: i64,
    pub max_mod_revision: i64,
    pub min_create_revision: i64,
    pub max_create_revision: i64,
}

/// etcd's RangeResponse (the header's revision is `revision`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RangeResponse {
    pub kvs: Vec<(Key, Entry)>,
    pub more: bool,
    /// How many keys the range holds, before filters and the limit.
    pub count: i64,
    pub revision: i64,
}

impl RangeRequest {
    /// Whether any filter is set (etcd then reads everything before limiting).
    fn filtered(&self) -> bool {
        self.min_mod_revision != 0
            || self.max_mod_revision != 0
            || self.min_create_revision != 0
            || self.max_create_revision != 0
    }

    fn keeps(&self, e: &Entry) -> bool {
        let within = |v: i64, min: i64, max: i64| (min == 0 || v >= min) && (max == 0 || v <= max);
        within(e.mod_revision, self.min_mod_revision, self.max_mod_revision)
            && within(
                e.create_revision,
                self.min_create_revision,
                self.max_create_revision,
            )
    }

    /// Builds the response from the range's entries in key order, as etcd
    /// does: count everything, filter, sort (ascending by default when a
    /// target other than the key is named), then cut at the limit.
    pub fn respond<'a>(
        &self,
        matched: impl Iterator<Item = (&'a Key, &'a Entry)>,
        revision: i64,
    ) -> RangeResponse {
        if self.count_only {
            return RangeResponse {
                kvs: Vec::new(),
                more: false,
                count: matched.count() as i64,
                revision,
            };
        }
        let mut order = self.sort_order;
        if self.sort_target != SortTarget::Key && order == SortOrder::None {
            order = SortOrder::Ascend;
        }
        // `limit` as a length; past what usize holds (wasm32) it is no limit.
        let limit = match self.limit {
            l if l > 0 => usize::try_from(l).unwrap_or(usize::MAX),
            _ => usize::MAX,
        };
        // Without a sort order or filters etcd reads only limit + 1 entries
        // (the extra one tells `more`), in key order, and sorts those (by a
        // target other than the key, ascending); the count still covers all.
        let wanted = if self.sort_order == SortOrder::None && !self.filtered() {
            limit.saturating_add(1)
        } else {
            usize::MAX
        };
        let mut count = 0i64;
        let mut kvs: Vec<(Key, Entry)> = Vec::new();
        for (k, e) in matched {
            count += 1;
            if kvs.len() < wanted && self.keeps(e) {
                kvs.push((k.clone(), e.clone()));
            }
        }
        if order != SortOrder::None {
            let target = self.sort_target;
            let descend = order == SortOrder::Descend;
            // Equal values keep key order either way, as etcd's sort does.
            crate::order::sort_by(&mut kvs, |(ka, a), (kb, b)| {
                let by = match target {
                    SortTarget::Key => ka.cmp(kb),
                    SortTarget::Version => a.version.cmp(&b.version),
                    SortTarget::Create => a.create_revision.cmp(&b.create_revision),
                    SortTarget::Mod => a.mod_revision.cmp(&b.mod_revision),
                    SortTarget::Value => a.value.cmp(&b.value),
                };
                if descend { by.reverse() } else { by }.then_with(|| ka.cmp(kb))
            });
        }
        let mut more = false;
        if kvs.len() > limit {
            kvs.truncate(limit);
            more = true;
        }
        if self.keys_only {
            for (_, e) in &mut kvs {
                e.value = Box::default();
            }
        }
        RangeResponse {
            kvs,
            more,
            count,
            revision,
        }
    }
}
