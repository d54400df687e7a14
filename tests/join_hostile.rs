//! The join service, with its default limits, against hostile clients:
//! hostnames, tokens and paths with newlines, carriage returns and escape
//! sequences, sent without a valid token (failure 6 of issue 12), each
//! shown in the log as one escaped line, none starting a line of its own;
//! and one address opening more connections than its share.

#[path = "support/join_server.rs"]
mod join_server;

use dcn::edge::join::client::JoinClient;
use dcn::wire::JoinRequest;
use join_server::{ControlPlane, log};

/// What an attacker wants the operator to read as the service's own line.
const FORGED: &str = "10.9.9.9 POST /v1/join -> 200 (host trusted, token abc) joined site edge1";

fn request(hostname: &str, token: &str) -> JoinRequest {
    JoinRequest {
        token: token.into(),
        hostname: hostname.into(),
        address: "10.240.1.10".into(),
        csr: "not a csr".into(),
        dcn_version: "test".into(),
        proof: None,
    }
}

#[test]
fn client_text_cannot_forge_or_colour_a_log_line() {
    log::capture();
    let cp = ControlPlane::start(join_server::serve);
    let client = JoinClient::new(&cp.endpoint, cp.ca.cert_pem()).unwrap();
    let good_token = cp.token.expose_full();
    let cases = [
        // The probe's finding: no token needed, the hostname is logged first.
        request(&format!("node1\n{FORGED}"), "x"),
        request(&format!("node1\r{FORGED}"), "x"),
        request(&format!("node1\u{1b}[2K\r{FORGED}"), &good_token),
        request(&format!("node1\u{2028}{FORGED}"), "x"),
        request("node1", &format!("ab\n{FORGED}.x")),
        request(&format!("node1\u{202e}{}", "x".repeat(5000)), "x"),
    ];
    for req in &cases {
        // Refused (the hostname is not one); what matters is the log.
        assert!(client.join(req).is_err());
    }
    // Paths: raw control bytes are refused by the HTTP parser; escaped ones
    // stay escaped.
    for path in ["/v1/nodes/a\u{1b}[31mb", "/v1/nodes/a%0A", "/v1/x\r\nX: y"] {
        cp.raw_https(
            format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes(),
        );
    }

    let text = log::text();
    for line in text.lines() {
        assert!(
            !line.starts_with("10.9.9.9") && !line.contains("\u{1b}"),
            "a forged or coloured line:\n{line:?}\nin:\n{text}"
        );
    }
    assert!(!text.contains('\r') && !text.contains('\u{2028}'), "{text}");
    assert!(
        text.contains(r#"(host "node1\n10.9.9.9 POST"#),
        "the hostname shows escaped:\n{text}"
    );
    let longest = text.lines().map(str::len).max().unwrap_or(0);
    assert!(longest < 1000, "a line of {longest} bytes:\n{text}");
    assert!(text.contains("/v1/nodes/a%0A"), "{text}");
}

#[test]
fn one_address_cannot_hold_every_connection() {
    let cp = ControlPlane::start(join_server::serve);
    // The default share of one address (Limits::default().per_address).
    let share = 16;
    let me = std::net::Ipv4Addr::LOCALHOST;
    let _held: Vec<_> = (0..share).map(|_| cp.tcp_from(me).unwrap()).collect();
    let mut more = cp.tcp_from(me).unwrap();
    more.set_read_timeout(Some(std::time::Duration::from_secs(3)))
        .unwrap();
    let mut buf = [0u8; 16];
    let start = std::time::Instant::now();
    let closed = matches!(std::io::Read::read(&mut more, &mut buf), Ok(0) | Err(_))
        && start.elapsed() < std::time::Duration::from_secs(2);
    assert!(
        closed,
        "connection {} from one address is held open",
        share + 1
    );
    // Another address is served meanwhile.
    let mut tls = cp.tls_from(std::net::Ipv4Addr::new(127, 0, 0, 2)).unwrap();
    std::io::Write::write_all(
        &mut tls,
        b"GET /v1/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    )
    .unwrap();
    let mut answer = String::new();
    let _ = std::io::Read::read_to_string(&mut tls, &mut answer);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
}
