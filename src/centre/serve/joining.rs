//! The hosts whose join is under way in this join service. A join holds
//! the registry's lock only to admit and to record, not while it makes
//! the host's accounts (keystone and RabbitMQ take seconds), so joins of
//! different hosts overlap; two joins of one host must not (the second
//! would give the host's accounts other passwords than the first reply
//! carries), and the second is asked to try again.
//!
//! It also keeps each host's last join reply for a few minutes: a node
//! whose request timed out while a busy control plane made its accounts
//! asks again, and gets the reply it missed instead of a second round of
//! accounts (which, with every retry, made a busy control plane busier).

use crate::centre::sites::Registry;
use crate::secrets::stored_hash;
use crate::wire::JoinReply;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a join's reply is kept for a retry of it.
pub const REPLY_KEPT: Duration = Duration::from_secs(10 * 60);

/// The hosts joining now, and the replies of recent joins.
#[derive(Debug)]
pub struct Joining {
    hosts: Mutex<BTreeSet<String>>,
    replies: Mutex<BTreeMap<String, KeptReply>>,
    reply_kept: Duration,
}

impl Default for Joining {
    fn default() -> Joining {
        Joining::keeping_replies_for(REPLY_KEPT)
    }
}

/// A join's reply, for the key that joined.
#[derive(Debug)]
struct KeptReply {
    key_pin: String,
    reply: JoinReply,
    at: Instant,
}

/// A host's place in [`Joining`], given back when dropped.
pub struct Turn<'a> {
    joining: &'a Joining,
    hostname: String,
}

impl Joining {
    pub fn new() -> Joining {
        Joining::default()
    }

    /// With replies kept for `reply_kept` rather than [`REPLY_KEPT`].
    pub fn keeping_replies_for(reply_kept: Duration) -> Joining {
        Joining {
            hosts: Mutex::default(),
            replies: Mutex::default(),
            reply_kept,
        }
    }

    /// `hostname`'s turn, or `None` while another join of it is under way.
    pub fn enter(&self, hostname: &str) -> Option<Turn<'_>> {
        let mut hosts = self.hosts.lock().unwrap_or_else(|e| e.into_inner());
        hosts.insert(hostname.to_string()).then(|| Turn {
            joining: self,
            hostname: hostname.to_string(),
        })
    }

    /// Keep `reply`, the answer to `hostname`'s join with the key of
    /// `key_pin`, for a retry. Expired replies go at the same time, so
    /// what is kept is bounded by the hosts that joined lately.
    pub fn keep(&self, hostname: &str, key_pin: &str, reply: &JoinReply) {
        let mut replies = self.replies.lock().unwrap_or_else(|e| e.into_inner());
        replies.retain(|_, r| r.at.elapsed() < self.reply_kept);
        let kept = KeptReply {
            key_pin: key_pin.to_string(),
            reply: reply.clone(),
            at: Instant::now(),
        };
        replies.insert(hostname.to_string(), kept);
    }

    /// The reply to give a rejoin of `hostname` with the key of `key_pin`
    /// that retries a join whose reply it missed: kept, and still the
    /// node's (the registry holds its secret: no join, removal or rotation
    /// came since).
    pub fn replay(&self, registry: &Registry, hostname: &str, key_pin: &str) -> Option<JoinReply> {
        let reply = self.kept(hostname, key_pin)?;
        let node = registry.node(hostname).ok()??;
        (node.secret_hash == stored_hash(&reply.node_secret)).then_some(reply)
    }

    /// The reply of `hostname`'s join with the key of `key_pin` in the
    /// last [`REPLY_KEPT`] (or the time given), if one is kept.
    pub fn kept(&self, hostname: &str, key_pin: &str) -> Option<JoinReply> {
        let replies = self.replies.lock().unwrap_or_else(|e| e.into_inner());
        (replies.get(hostname))
            .filter(|r| r.key_pin == key_pin && r.at.elapsed() < self.reply_kept)
            .map(|r| r.reply.clone())
    }
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        let mut hosts = (self.joining.hosts.lock()).unwrap_or_else(|e| e.into_inner());
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

    fn reply(secret: &str) -> JoinReply {
        JoinReply {
            site: "s".into(),
            node_certificate: String::new(),
            node_secret: secret.into(),
            credentials: BTreeMap::new(),
        }
    }

    #[test]
    fn a_reply_is_kept_for_the_key_that_joined() {
        let j = Joining::new();
        assert!(j.kept("edge1", "pin-a").is_none());
        j.keep("edge1", "pin-a", &reply("one"));
        assert_eq!(j.kept("edge1", "pin-a").unwrap().node_secret, "one");
        assert!(j.kept("edge1", "pin-b").is_none(), "another key");
        assert!(j.kept("edge2", "pin-a").is_none(), "another host");
        j.keep("edge1", "pin-a", &reply("two"));
        assert_eq!(j.kept("edge1", "pin-a").unwrap().node_secret, "two");
    }

    #[test]
    fn a_reply_is_not_kept_past_its_time() {
        let j = Joining::keeping_replies_for(Duration::from_millis(50));
        j.keep("edge1", "pin-a", &reply("one"));
        std::thread::sleep(Duration::from_millis(60));
        assert!(
            j.kept("edge1", "pin-a").is_none(),
            "a later join makes new accounts"
        );
        j.keep("edge2", "pin-a", &reply("two"));
        assert_eq!(j.replies.lock().unwrap().len(), 1, "the expired one went");
    }
}
