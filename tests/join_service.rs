//! The join service over real HTTPS on loopback, with a control plane's
//! state in a temporary root: health, a join (CSR signed, credentials
//! returned, token use counted, node recorded), each refusal with its
//! reason, and the rate limit. RabbitMQ and keystone are not here: node
//! accounts are recorded (tests/support/join_server.rs; the lab makes them
//! for real).

#[path = "support/join_server.rs"]
mod join_server;

use dcn::bundle::JoinToken;
use dcn::centre::sites::Registry;
use dcn::edge::join::client::{JoinClient, Refused};
use dcn::passwords::PasswordStore;
use dcn::pki::CertificateAuthority;
use dcn::recipes::site_credentials::NodeAccount;
use dcn::wire::JoinRequest;
use join_server::{ControlPlane, token};

fn control_plane() -> ControlPlane {
    ControlPlane::start(join_server::serve)
}

fn request(token: &JoinToken, hostname: &str) -> JoinRequest {
    request_with_key(token, hostname, &join_server::node_key())
}

fn request_with_key(token: &JoinToken, hostname: &str, key: &rcgen::KeyPair) -> JoinRequest {
    join_server::join_request(&token.expose_full(), hostname, key)
}

fn refusal(client: &JoinClient, req: &JoinRequest) -> String {
    let err = client.join(req).unwrap_err();
    let r = err
        .downcast_ref::<Refused>()
        .unwrap_or_else(|| panic!("not a refusal: {err:#}"));
    format!("{} {}", r.0.error, r.0.message)
}

#[test]
fn joins_and_refusals_over_https() {
    let cp = control_plane();
    let client = JoinClient::new(&cp.endpoint, cp.ca.cert_pem()).unwrap();
    let health = client.health().unwrap();
    dcn::timefmt::parse_rfc3339(&health.time).unwrap();

    let reg = Registry::new(&cp.files);
    let good = token(&reg, "edge1", 3600, 1);
    let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
    let reply = client
        .join(&request_with_key(&good, "node1", &key))
        .unwrap();
    assert_eq!(reply.site, "edge1");
    // The credentials the edge recipes declare: accounts of the node's
    // own (not of its site) with the passwords the accounts were given,
    // and the control plane's metadata secret.
    assert_eq!(
        reply.credentials.keys().collect::<Vec<_>>(),
        ["compute_service", "metadata_secret", "site_rabbit"]
    );
    let accounts = dcn::recipes::Recipes::embedded()
        .unwrap()
        .node_accounts("node1")
        .unwrap();
    let [rabbit, keystone] = accounts.as_slice() else {
        panic!("two accounts: {accounts:?}");
    };
    assert_eq!(rabbit.to_string(), "RabbitMQ user dcn-node-node1");
    assert_eq!(keystone.to_string(), "keystone user dcn-node-node1");
    let given = |name: &str, account: &NodeAccount| {
        let c = &reply.credentials[name];
        assert_eq!(c.username.as_deref(), Some(account.username()));
        assert_eq!(
            Some(&c.password),
            cp.accounts.password("node1", account).as_ref()
        );
    };
    given("site_rabbit", rabbit);
    given("compute_service", keystone);
    assert_ne!(
        reply.credentials["site_rabbit"].password,
        reply.credentials["compute_service"].password
    );
    let shared = PasswordStore::load(&cp.files).unwrap();
    assert_eq!(reply.credentials["metadata_secret"].username, None);
    assert_eq!(
        &reply.credentials["metadata_secret"].password,
        shared.get("metadata_secret").unwrap()
    );
    // Its certificate comes from a CA of its own, which the OVN SB trusts
    // (and the dcn CA did not sign: the SB does not trust that one).
    let record = reg.node("node1").unwrap().unwrap();
    let node_ca = record.southbound_ca.clone().unwrap();
    dcn::pki::verify_issued_by(&node_ca, &reply.node_certificate).unwrap();
    assert!(dcn::pki::verify_issued_by(cp.ca.cert_pem(), &reply.node_certificate).is_err());
    let admitted = cp
        .files
        .read_string(dcn::openstack::southbound::admission::CLIENT_CAS)
        .unwrap()
        .unwrap();
    assert!(admitted.contains(node_ca.trim()));
    assert!(!admitted.contains(cp.ca.cert_pem().trim()));
    let info = dcn::pki::CertInfo::from_pem(&reply.node_certificate).unwrap();
    assert!(info.subject.contains("node1"));
    assert_eq!(reg.token(&good.id).unwrap().unwrap().uses, 1);
    // The same CSR again, without a proof that its sender holds the key
    // now, re-admits nothing, though the CSR and token are the real ones.
    let replayed = request_with_key(&good, "node1", &key);
    let before = reg.node("node1").unwrap();
    let r = refusal(&client, &replayed);
    assert!(r.starts_with("proof-required"), "{r}");
    assert_eq!(reg.node("node1").unwrap(), before);
    assert_eq!(cp.accounts.count(), 2, "no new passwords");
    // The same host joining again with its key proves it holds it: not a
    // new use. Minutes after its join, it is taken for a retry of a join
    // whose reply was lost (a busy control plane answered after the
    // node's request timed out): it gets that reply again, and no second
    // round of accounts is made.
    let again = client.join_with_proof(&replayed, &key, &good.id).unwrap();
    assert_eq!(again.node_secret, reply.node_secret);
    assert_eq!(again.node_certificate, reply.node_certificate);
    assert_eq!(
        again.credentials["site_rabbit"].password,
        reply.credentials["site_rabbit"].password
    );
    assert_eq!(
        Some(&again.credentials["site_rabbit"].password),
        cp.accounts.password("node1", rabbit).as_ref()
    );
    assert_eq!(cp.accounts.count(), 2, "no new accounts for a retry");
    assert_eq!(reg.token(&good.id).unwrap().unwrap().uses, 1);
    let before = reg.node("node1").unwrap();
    // Anyone else naming node1 gets nothing, even with the site's token:
    // an old bundle does not reach a joined host's credentials.
    let r = refusal(&client, &request(&good, "node1"));
    assert!(
        r.starts_with("node-exists") && r.contains("dcn node remove node1"),
        "{r}"
    );
    let fresh = token(&reg, "edge1", 3600, 5);
    assert!(refusal(&client, &request(&fresh, "node1")).starts_with("node-exists"));
    assert_eq!(reg.token(&fresh.id).unwrap().unwrap().uses, 0);
    assert_eq!(
        reg.node("node1").unwrap(),
        before,
        "the refused requests changed nothing"
    );
    assert_eq!(
        cp.accounts.count(),
        2,
        "two accounts for the one join, none for retries or refusals"
    );

    // Each refusal names its reason.
    assert!(refusal(&client, &request(&good, "node2")).starts_with("token-used-up"));
    let expired = token(&reg, "edge1", -60, 5);
    assert!(refusal(&client, &request(&expired, "node3")).starts_with("token-expired"));
    assert!(
        refusal(&client, &request(&JoinToken::generate(), "node3")).starts_with("token-unknown")
    );
    let revoked = token(&reg, "gone", 3600, 5);
    assert!(refusal(&client, &request(&revoked, "node3")).starts_with("site-revoked"));
    let other_site = token(&reg, "edge2", 3600, 5);
    let r = refusal(&client, &request(&other_site, "node1"));
    assert!(
        r.starts_with("node-in-other-site") && r.contains("dcn node remove node1"),
        "{r}"
    );
    let mut bad = request(&other_site, "node4");
    bad.csr = "not a csr".into();
    assert!(refusal(&client, &bad).starts_with("bad-request"));
    // The node secret authenticates status requests; a wrong one is refused.
    let err = client.node_status("node1", "wrong").unwrap_err();
    assert!(err.downcast_ref::<Refused>().is_some(), "{err:#}");
}

#[test]
fn the_service_only_talks_tls_with_its_ca_and_rate_limits() {
    let cp = control_plane();
    let other = CertificateAuthority::generate("another CA").unwrap();
    let stranger = JoinClient::new(&cp.endpoint, other.cert_pem()).unwrap();
    // Refused as untrusted, which a join does not retry (no attempt can
    // succeed), and said so with the way out.
    let err = stranger.health().unwrap_err();
    assert!(
        err.downcast_ref::<dcn::edge::join::client::Untrusted>()
            .is_some(),
        "a client trusting another CA refuses the service: {err:#}"
    );
    assert!(format!("{err:#}").contains("dcn bundle export"), "{err:#}");
    let client = JoinClient::new(&cp.endpoint, cp.ca.cert_pem()).unwrap();
    let mut limited = false;
    for _ in 0..40 {
        if let Err(e) = client.health()
            && let Some(r) = e.downcast_ref::<Refused>()
        {
            assert_eq!(r.0.error, "rate-limited");
            limited = true;
            break;
        }
    }
    assert!(limited, "40 quick requests from one address hit the limit");
}

/// A node's own requests count per node (hosts behind one address each
/// keep their pace), but refused credentials count against their address:
/// a guesser that puts a new host name in each path is slowed down all
/// the same, and then its address's requests with credentials wait too.
#[test]
fn refused_node_credentials_are_limited_per_address_whatever_the_host_names() {
    let cp = control_plane();
    let client = JoinClient::new(&cp.endpoint, cp.ca.cert_pem()).unwrap();
    let mut refused = 0;
    let mut limited = None;
    for n in 0..40 {
        let err = client
            .node_status(&format!("guess{n}"), "wrong")
            .unwrap_err();
        let r = err.downcast_ref::<Refused>().expect("a refusal");
        if r.0.error == "rate-limited" {
            limited = Some(n);
            break;
        }
        refused += 1;
    }
    assert_eq!(limited, Some(20), "after {refused} refused credentials");
    let err = client.node_status("node1", "wrong").unwrap_err();
    assert_eq!(
        err.downcast_ref::<Refused>().unwrap().0.error,
        "rate-limited"
    );
}

/// A host and a control plane of different join protocols are told so, and
/// nothing is provisioned: the older dcn's `POST /v1/join` is refused before
/// its body is read, and a join service without `/v2/join` (here: a base
/// URL under which the service has nothing) is named as older.
#[test]
fn a_join_across_protocol_versions_is_refused_with_what_to_run() {
    let cp = control_plane();
    let reg = Registry::new(&cp.files);
    let t = token(&reg, "edge1", 3600, 1);
    let body = serde_json::to_string(&request(&t, "old1")).unwrap();
    let reply = cp.raw_https(
        format!(
            "POST /v1/join HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .as_bytes(),
    );
    assert!(reply.starts_with("HTTP/1.1 410"), "{reply}");
    assert!(
        reply.contains("protocol-too-old")
            && reply.contains(&format!("run dcn {}", env!("CARGO_PKG_VERSION"))),
        "{reply}"
    );
    assert_eq!(reg.token(&t.id).unwrap().unwrap().uses, 0);
    assert!(reg.node("old1").unwrap().is_none());
    assert_eq!(cp.accounts.count(), 0);

    let elsewhere = JoinClient::new(&format!("{}/older", cp.endpoint), cp.ca.cert_pem()).unwrap();
    let err = format!("{:#}", elsewhere.join(&request(&t, "new1")).unwrap_err());
    assert!(
        err.contains("does not know /v2/join") && err.contains("upgrade dcn on the control plane"),
        "{err}"
    );
    assert_eq!(cp.accounts.count(), 0);
}
