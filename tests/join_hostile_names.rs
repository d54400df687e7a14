//! The join service against the second outside probe (issue 21): paths
//! whose prefix and suffix overlap, a join token used to join as the
//! control plane itself or as another compute host, names no host can
//! have, and a re-join with a CSR someone kept. Each must be answered with
//! a refusal that names the reason, change nothing, and leave the service
//! up for everyone else.

#[path = "support/join_server.rs"]
mod join_server;

use dcn::centre::sites::Registry;
use dcn::edge::join::client::{JoinClient, Refused};
use dcn::wire::{JoinRequest, prove};
use join_server::{ControlPlane, token};

fn key() -> rcgen::KeyPair {
    join_server::node_key()
}

fn request(token: &dcn::bundle::JoinToken, hostname: &str, key: &rcgen::KeyPair) -> JoinRequest {
    join_server::join_request(&token.expose_full(), hostname, key)
}

fn refusal(result: anyhow::Result<dcn::wire::JoinReply>) -> String {
    let err = result.unwrap_err();
    let r = err
        .downcast_ref::<Refused>()
        .unwrap_or_else(|| panic!("not a refusal: {err:#}"));
    format!("{} {}", r.0.error, r.0.message)
}

/// The HTTP status line of `request` sent raw over TLS.
fn status(cp: &ControlPlane, request: &str) -> String {
    let answer = cp.raw_https(request.as_bytes());
    answer.lines().next().unwrap_or("").to_string()
}

#[test]
fn node_paths_whose_prefix_and_suffix_overlap_are_answered_and_the_service_lives() {
    let cp = ControlPlane::start(join_server::serve);
    let client = JoinClient::new(&cp.endpoint, cp.ca.cert_pem()).unwrap();
    let port = cp.port;
    let requests = [
        "GET /v1/nodes/config HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".to_string(),
        "POST /v1/nodes/config HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_string(),
        format!("GET https://127.0.0.1:{port}/v1/nodes/config HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"),
        "GET /v1/nodes//config HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".to_string(),
        "GET /v1/nodes/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".to_string(),
    ];
    for (i, r) in requests.iter().enumerate() {
        let line = status(&cp, r);
        // An answer, not a dropped connection: `config` is a host name with
        // no node secret (401), the others no host name or no such route.
        assert!(
            line.starts_with("HTTP/1.1 401") || line.starts_with("HTTP/1.1 404"),
            "request {i}: {line:?}"
        );
        client
            .health()
            .unwrap_or_else(|e| panic!("after request {i} the service is down: {e:#}"));
    }
}

#[test]
fn no_token_joins_as_the_control_plane_or_another_compute_host() {
    let cp = ControlPlane::start(join_server::serve);
    let client = JoinClient::new(&cp.endpoint, cp.ca.cert_pem()).unwrap();
    let reg = Registry::new(&cp.files);
    let t = token(&reg, "edge1", 3600, 10);
    for (name, reason) in [
        ("cp", "control plane's own host name"),
        ("legacy1", "already a compute host"),
    ] {
        let r = refusal(client.join(&request(&t, name, &key())));
        assert!(
            r.starts_with("name-reserved") && r.contains(reason),
            "{name}: {r}"
        );
    }
    for (name, reason) in [
        ("localhost", "reserved"),
        ("localhost.localdomain", "reserved"),
        (
            &format!(
                "{}.{}.{}.{}",
                "a".repeat(63),
                "b".repeat(63),
                "c".repeat(63),
                "d".repeat(61)
            )[..],
            "at most 64",
        ),
        (
            &format!("{}.{}", "x".repeat(30), "y".repeat(34))[..],
            "at most 64",
        ),
    ] {
        let r = refusal(client.join(&request(&t, name, &key())));
        assert!(r.starts_with("bad-request") && r.contains(reason), "{r}");
    }
    // Nothing was recorded, provisioned or spent.
    assert!(reg.nodes().unwrap().is_empty());
    assert_eq!(cp.accounts.count(), 0);
    assert_eq!(reg.token(&t.id).unwrap().unwrap().uses, 0);
    // The longest name a host can have joins.
    let longest = format!("{}.{}", "n".repeat(32), "m".repeat(31));
    client.join(&request(&t, &longest, &key())).unwrap();
    assert_eq!(reg.token(&t.id).unwrap().unwrap().uses, 1);
}

#[test]
fn a_rejoin_must_prove_it_holds_the_key_now() {
    let cp = ControlPlane::start(join_server::serve);
    let client = JoinClient::new(&cp.endpoint, cp.ca.cert_pem()).unwrap();
    let reg = Registry::new(&cp.files);
    let t = token(&reg, "edge1", 3600, 1);
    let k = key();
    let kept = request(&t, "edge1-n1", &k);
    let first = client.join_with_proof(&kept, &k, &t.id).unwrap();
    let record = reg.node("edge1-n1").unwrap();
    let made = cp.accounts.count();

    // The probe's case: the same CSR bytes and the (now used-up) token,
    // from anywhere. Without a proof, nothing is re-issued.
    let r = refusal(client.join(&kept));
    assert!(r.starts_with("proof-required"), "{r}");
    // A proof made with another key, or for another host or token, or a
    // made-up challenge, is refused.
    let other = key();
    let c = client.challenge().unwrap();
    let mut forged = kept.clone();
    forged.proof = Some(prove(&other, &c, "edge1-n1", &t.id).unwrap());
    assert!(refusal(client.join(&forged)).starts_with("proof-invalid"));
    forged.proof = Some(prove(&k, &c, "edge1-n2", &t.id).unwrap());
    assert!(refusal(client.join(&forged)).starts_with("proof-invalid"));
    forged.proof = Some(prove(&k, &c, "edge1-n1", "another").unwrap());
    assert!(refusal(client.join(&forged)).starts_with("proof-invalid"));
    let mut made_up = c.clone();
    made_up.challenge =
        "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA".into();
    forged.proof = Some(prove(&k, &made_up, "edge1-n1", &t.id).unwrap());
    assert!(refusal(client.join(&forged)).starts_with("proof-invalid"));
    assert_eq!(reg.node("edge1-n1").unwrap(), record, "nothing changed");
    assert_eq!(cp.accounts.count(), made, "no password was reset");

    // The host itself proves it and, minutes after its join, gets that
    // join's reply again (a retry of a reply it missed: no new accounts);
    // its proof cannot be sent again.
    let mut proven = kept.clone();
    proven.proof = Some(prove(&k, &client.challenge().unwrap(), "edge1-n1", &t.id).unwrap());
    let again = client.join(&proven).unwrap();
    assert_eq!(again.node_secret, first.node_secret);
    assert_eq!(cp.accounts.count(), made, "no password was reset");
    let r = refusal(client.join(&proven));
    assert!(
        r.starts_with("proof-invalid") && r.contains("used already"),
        "{r}"
    );
}
