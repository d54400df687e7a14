//! The hosts whose join is under way in this join service. A join holds
//! the registry's lock only to admit and to record, not while it makes
//! the host's accounts (keystone and RabbitMQ take seconds), so joins of
//! different hosts overlap; two joins of one host must not (the second
//! would give the host's accounts other passwords than the first reply
//! carries), and the second is asked to try again.

use std::collections::BTreeSet;
use std::sync::Mutex;

/// The hosts joining now.
#[derive(Debug, Default)]
pub struct Joining(Mutex<BTreeSet<String>>);

/// A host's place in [`Joining`], given back when dropped.
pub struct Turn<'a> {
    joining: &'a Joining,
    hostname: String,
}

impl Joining {
    pub fn new() -> Joining {
        Joining::default()
    }

    /// `hostname`'s turn, or `None` while another join of it is under way.
    pub fn enter(&self, hostname: &str) -> Option<Turn<'_>> {
        let mut hosts = self.0.lock().unwrap_or_else(|e| e.into_inner());
        hosts.insert(hostname.to_string()).then(|| Turn {
            joining: self,
            hostname: hostname.to_string(),
        })
    }
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        let mut hosts = (self.joining.0.lock()).unwrap_or_else(|e| e.into_inner());
        hosts.remove(&self.hostname);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_join_per_host_at_a_time() {
        let j = Joining::new();
        let a = j.enter("edge1").unwrap();
        assert!(j.enter("edge1").is_none());
        let _b = j.enter("edge2").unwrap();
        drop(a);
        assert!(j.enter("edge1").is_some());
    }
}
