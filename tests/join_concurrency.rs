//! Joins at once (docs/scale.md): the join service makes a host's accounts
//! without holding the registry's lock, so joins of different hosts
//! overlap instead of taking turns, while a token's uses still hold
//! whatever arrives at once, a join that fails gives its use back, and two
//! joins of one host never overlap. Deterministic: node accounts that wait
//! for each other prove the overlap, no timing is measured.

#[path = "support/join_server.rs"]
mod join_server;

use dcn::edge::join::client::{JoinClient, Refused};
use dcn::openstack::accounts::NodeAccounts;
use dcn::openstack::compute::ComputeHosts;
use dcn::recipes::site_credentials::NodeAccount;
use dcn::secrets::Secret;
use join_server::ControlPlane;
use std::collections::BTreeSet;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// Node accounts whose first account of each host waits until `together`
/// hosts are inside at the same time (or gives up after a minute: then
/// the joins took turns). A host named `fail-*` fails its accounts.
struct Rendezvous {
    together: usize,
    inside: Mutex<BTreeSet<String>>,
    met: Mutex<bool>,
    changed: Condvar,
}

impl Rendezvous {
    fn new(together: usize) -> Arc<Rendezvous> {
        Arc::new(Rendezvous {
            together,
            inside: Mutex::default(),
            met: Mutex::new(false),
            changed: Condvar::new(),
        })
    }

    fn met(&self) -> bool {
        *self.met.lock().unwrap()
    }
}

impl ComputeHosts for Rendezvous {
    fn is_compute_host(&self, hostname: &str) -> anyhow::Result<bool> {
        Ok(hostname == "cp")
    }
}

impl NodeAccounts for Rendezvous {
    fn make(&self, hostname: &str, _: &NodeAccount) -> anyhow::Result<Secret> {
        if hostname.starts_with("fail-") {
            anyhow::bail!("keystone is down");
        }
        let mut inside = self.inside.lock().unwrap();
        if !inside.insert(hostname.to_string()) {
            return Ok(dcn::secrets::generate_password());
        }
        if inside.len() >= self.together {
            *self.met.lock().unwrap() = true;
            self.changed.notify_all();
            return Ok(dcn::secrets::generate_password());
        }
        let (_inside, timeout) = self
            .changed
            .wait_timeout_while(inside, Duration::from_secs(60), |_| !self.met())
            .unwrap();
        if timeout.timed_out() {
            anyhow::bail!("the other joins never came in while this one made accounts");
        }
        Ok(dcn::secrets::generate_password())
    }

    fn delete(&self, _: &str, _: &NodeAccount) -> anyhow::Result<()> {
        Ok(())
    }
}

/// A control plane whose node accounts are `accounts`, and a client.
fn service(accounts: Arc<Rendezvous>) -> (ControlPlane, JoinClient) {
    let cp = ControlPlane::start(move |host, listen, _| {
        let _ = dcn::centre::serve::serve_with(
            host,
            join_server::recipes(),
            listen,
            dcn::centre::serve::Limits::default(),
            accounts,
        );
    });
    let client = JoinClient::new(&cp.endpoint, cp.ca.cert_pem()).unwrap();
    (cp, client)
}

/// Join `hostnames` at once with `token`; each one's result (the refusal's
/// reason when refused).
fn join_at_once(client: &JoinClient, token: &str, hostnames: &[&str]) -> Vec<Result<(), String>> {
    std::thread::scope(|scope| {
        let jobs: Vec<_> = (hostnames.iter())
            .map(|h| {
                scope.spawn(move || {
                    let req = join_server::join_request(token, h, &join_server::node_key());
                    client.join(&req).map(|_| ()).map_err(|e| {
                        (e.downcast_ref::<Refused>())
                            .map_or(format!("{e:#}"), |r| r.0.error.clone())
                    })
                })
            })
            .collect();
        jobs.into_iter().map(|j| j.join().unwrap()).collect()
    })
}

#[test]
fn joins_of_different_hosts_overlap() {
    let accounts = Rendezvous::new(4);
    let (cp, client) = service(accounts.clone());
    let results = join_at_once(&client, &cp.token.expose_full(), &["e1", "e2", "e3", "e4"]);
    assert!(results.iter().all(|r| r.is_ok()), "{results:?}");
    assert!(
        accounts.met(),
        "the four joins made their accounts at the same time"
    );
}

#[test]
fn a_token_never_admits_more_joins_than_its_uses_even_at_once() {
    // Five uses: the sixth host is refused even though all arrive at once
    // (the five that got in meet while making their accounts).
    let accounts = Rendezvous::new(5);
    let (cp, client) = service(accounts);
    let hosts = ["u1", "u2", "u3", "u4", "u5", "u6"];
    let results = join_at_once(&client, &cp.token.expose_full(), &hosts);
    let joined = results.iter().filter(|r| r.is_ok()).count();
    let used_up: Vec<_> = (results.iter())
        .filter(|r| r.as_ref().err().map(String::as_str) == Some("token-used-up"))
        .collect();
    assert_eq!((joined, used_up.len()), (5, 1), "{results:?}");
}

#[test]
fn a_join_that_fails_gives_its_token_use_back() {
    let accounts = Rendezvous::new(1);
    let (cp, client) = service(accounts);
    let token = cp.token.expose_full();
    // Four hosts use four of the five uses; one more fails while making
    // its accounts, and gives its use back to the last host.
    let four = join_at_once(&client, &token, &["g1", "g2", "g3", "g4"]);
    assert!(four.iter().all(|r| r.is_ok()), "{four:?}");
    let failed = join_at_once(&client, &token, &["fail-1"]);
    assert_eq!(failed, vec![Err("internal".to_string())]);
    let last = join_at_once(&client, &token, &["g5"]);
    assert_eq!(last, vec![Ok(())]);
    let after = join_at_once(&client, &token, &["g6"]);
    assert_eq!(after, vec![Err("token-used-up".to_string())]);
}

#[test]
fn two_joins_of_one_host_never_overlap() {
    let accounts = Rendezvous::new(2);
    let (cp, client) = service(accounts.clone());
    let token = cp.token.expose_full();
    std::thread::scope(|scope| {
        let first = scope.spawn(|| join_at_once(&client, &token, &["same"]));
        // The first join of `same` is making its accounts (and waits there
        // for another host): a second join of `same` is asked to try again.
        while !accounts.inside.lock().unwrap().contains("same") {
            std::thread::sleep(Duration::from_millis(20));
        }
        let second = join_at_once(&client, &token, &["same"]);
        assert_eq!(second, vec![Err("rate-limited".to_string())]);
        let other = join_at_once(&client, &token, &["other"]);
        assert_eq!(other, vec![Ok(())]);
        assert_eq!(first.join().unwrap(), vec![Ok(())]);
    });
}
