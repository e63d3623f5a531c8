//! Host entries: a few small named records the host keeps in the lessor's
//! store beside its state (the server keeps etcd's alarms there, as etcd
//! keeps them in its backend beside the keys). The lessor does not read
//! them; it stores them with the same durability as its own changes, carries
//! them through snapshots and hands them back after a restore.

use crate::error::{Error, Result};
use crate::lessor::Lessor;
use crate::storage::codec::{host_key, valid_host_name};
use crate::storage::Batch;
use crate::types::{MAX_HOST_ENTRIES, MAX_HOST_VALUE};

impl Lessor {
    /// The host entry `name`, if there is one.
    pub fn host_entry(&self, name: &str) -> Option<&[u8]> {
        self.host
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_slice())
    }

    /// Sets (`Some`) or removes (`None`) the host entry `name`: written to
    /// the store first, so nothing changes if the store refuses it. Names are
    /// 1 to 64 of `A-Z a-z 0-9 . _ -`; values at most 1 MiB; at most 64
    /// entries.
    pub fn set_host_entry(&mut self, name: &str, value: Option<&[u8]>) -> Result<()> {
        if !valid_host_name(name) {
            return Err(Error::invalid(
                "host entry name must be 1 to 64 of A-Z a-z 0-9 . _ -",
            ));
        }
        if value.is_some_and(|v| v.len() > MAX_HOST_VALUE) {
            return Err(Error::invalid("host entry value is longer than 1 MiB"));
        }
        let old = self.host_entry(name);
        if old == value {
            return Ok(());
        }
        if old.is_none() && self.host.len() >= MAX_HOST_ENTRIES {
            return Err(Error::invalid("there are 64 host entries already"));
        }
        let mut batch = Batch::default();
        match value {
            Some(v) => batch.put(&host_key(name), v),
            None => batch.delete(&host_key(name)),
        }
        self.store.write(&batch)?;
        // (A few entries: a list.)
        self.host.retain(|(n, _)| n != name);
        if let Some(v) = value {
            self.host.push((name.to_string(), v.to_vec()));
        }
        Ok(())
    }
}
