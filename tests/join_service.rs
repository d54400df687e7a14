//! The join service over real HTTPS on loopback, with a control plane's
//! state in a temporary root: health, a join (CSR signed, credentials
//! returned, token use counted, node recorded), each refusal with its
//! reason, and the rate limit. RabbitMQ and keystone are not here: node
//! accounts are recorded (tests/support/join_server.rs; the lab makes them
//! for real).

#[path = "support/join_server.rs"]
mod join_server;

use dcn::bundle::JoinToken;
use dcn::join::client::{JoinClient, Refused};
use dcn::join::protocol::JoinRequest;
use dcn::pki::CertificateAuthority;
use dcn::sites::Registry;
use join_server::{ControlPlane, token};

fn control_plane() -> ControlPlane {
    ControlPlane::start(join_server::serve)
}

fn request(token: &JoinToken, hostname: &str) -> JoinRequest {
    let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
    request_with_key(token, hostname, &key)
}

fn request_with_key(token: &JoinToken, hostname: &str, key: &rcgen::KeyPair) -> JoinRequest {
    let csr = rcgen::CertificateParams::new(vec![hostname.to_string()])
        .unwrap()
        .serialize_request(key)
        .unwrap()
        .pem()
        .unwrap();
    JoinRequest {
        token: token.expose_full(),
        hostname: hostname.into(),
        address: "10.240.1.10".into(),
        csr,
        dcn_version: "test".into(),
    }
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
    // Accounts of the node's own, not of its site.
    assert_eq!(reply.messaging.username, "dcn-node-node1");
    assert_eq!(reply.messaging.password, "rabbit-node1-1");
    assert_eq!(reply.service_user.password, "keystone-node1-1");
    // Its certificate comes from a CA of its own, which the OVN SB trusts
    // (and the dcn CA did not sign: the SB does not trust that one).
    let record = reg.node("node1").unwrap().unwrap();
    let node_ca = record.ovn_ca.clone().unwrap();
    dcn::pki::verify_issued_by(&node_ca, &reply.node_certificate).unwrap();
    assert!(dcn::pki::verify_issued_by(cp.ca.cert_pem(), &reply.node_certificate).is_err());
    let admitted = cp
        .files
        .read_string(dcn::sites::ovn_access::CLIENT_CAS)
        .unwrap()
        .unwrap();
    assert!(admitted.contains(node_ca.trim()));
    assert!(!admitted.contains(cp.ca.cert_pem().trim()));
    let info = dcn::pki::CertInfo::from_pem(&reply.node_certificate).unwrap();
    assert!(info.subject.contains("node1"));
    assert_eq!(reg.token(&good.id).unwrap().unwrap().uses, 1);
    // The same host joining again with its key (a resumed join) is not a
    // new use; it gets new passwords.
    let again = client
        .join(&request_with_key(&good, "node1", &key))
        .unwrap();
    assert_eq!(again.messaging.password, "rabbit-node1-2");
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
    assert_eq!(cp.accounts.grants.lock().unwrap().len(), 2);

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
    assert!(
        stranger.health().is_err(),
        "a client trusting another CA refuses the service"
    );
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
