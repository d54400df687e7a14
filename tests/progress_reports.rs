//! Progress reports (`POST /v1/progress`) over real HTTPS against the join
//! service, with a control plane's state in a temporary root: a node's
//! phases from the BMC to its join in order (the deploy's through the
//! store, the node's through the edge reporter, `joined` recorded by the
//! join), the join token before the join and only the node secret after,
//! a token speaking for at most maxUses host names, oversize bodies and
//! logs bounded, control characters escaped, nothing written on a refusal,
//! and a reporter that never holds up the work it reports on.

#[path = "support/join_server.rs"]
mod join_server;

use dcn::centre::sites::Registry;
use dcn::centre::sites::progress::{self, ProgressRecord};
use dcn::edge::join::client::JoinClient;
use dcn::edge::join::reporter::Reporter;
use dcn::secrets::Secret;
use dcn::wire::{JoinRequest, Phase, ProgressReport};
use join_server::{ControlPlane, token};
use std::time::{Duration, Instant};

fn join_request(token: &str, hostname: &str) -> JoinRequest {
    let mut r = join_server::join_request(token, hostname, &join_server::node_key());
    r.address = "10.240.1.20".into();
    r
}

fn report(hostname: &str, phase: Phase) -> ProgressReport {
    ProgressReport {
        hostname: hostname.into(),
        phase,
        detail: None,
        log: vec![],
    }
}

fn record(cp: &ControlPlane, hostname: &str) -> ProgressRecord {
    progress::read(&cp.files, hostname).unwrap().unwrap()
}

/// Every progress file and its contents.
fn snapshot(cp: &ControlPlane) -> Vec<(String, String)> {
    let dir = cp.dir.path().join("var/lib/dcn/progress");
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| {
                    (
                        e.file_name().to_string_lossy().into_owned(),
                        std::fs::read_to_string(e.path()).unwrap(),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// A raw `POST /v1/progress` with `bearer` and `body`: the status line and
/// the body of the answer.
fn post(cp: &ControlPlane, bearer: &str, body: &[u8]) -> String {
    let mut req = format!(
        "POST /v1/progress HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer {bearer}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    req.extend_from_slice(body);
    cp.raw_https(&req)
}

#[test]
fn phases_arrive_in_order_with_the_token_then_the_node_secret() {
    let cp = ControlPlane::start(join_server::serve);
    let reg = Registry::new(&cp.files);
    let tok = token(&reg, "edge1", 3600, 1).expose_full();
    let client = || JoinClient::new(&cp.endpoint, cp.ca.cert_pem()).unwrap();
    let host = "edge1-n1";
    let centre =
        |phase| progress::record_at_centre(&cp.files, "edge1", host, phase, None, &[]).unwrap();

    centre(Phase::MediaInserted);
    centre(Phase::PoweredOn);
    // The installer, with the bundle's token.
    let installer = Reporter::new(
        client(),
        host,
        Secret::new(tok.clone()),
        Duration::from_secs(60),
    );
    installer.phase(Phase::InstallerStarted, Some("bundle verified"));
    installer.phase(Phase::InstallerStarted, Some("copying the OS"));
    installer.phase(Phase::DiskWritten, None);
    installer.finish(Duration::from_secs(20));
    centre(Phase::MediaEjected);
    // The first boot's join: the token until the join answers, the node
    // secret after.
    let join = Reporter::new(
        client(),
        host,
        Secret::new(tok.clone()),
        Duration::from_secs(60),
    );
    join.phase(Phase::FirstBoot, None);
    join.phase(Phase::JoinStarted, None);
    join.phase(Phase::JoinStep, Some("join the site"));
    // The join request is not in the reporter's queue: what was queued
    // with the token must have left before it, or the centre (which takes
    // only the node secret once the host joined) refuses it. This is what
    // `dcn join` does before its request.
    assert!(
        join.flush(Duration::from_secs(20)),
        "the reports did not leave"
    );
    let reply = client().join(&join_request(&tok, host)).unwrap();
    join.use_credential(Secret::new(reply.node_secret.clone()));
    join.phase(
        Phase::JoinStep,
        Some("install and configure the compute services"),
    );
    join.finish(Duration::from_secs(20));

    let r = record(&cp, host);
    let seen: Vec<String> = r
        .history
        .iter()
        .map(|e| match &e.detail {
            Some(d) => format!("{} ({d})", e.phase),
            None => e.phase.to_string(),
        })
        .collect();
    assert_eq!(
        seen,
        [
            "media-inserted",
            "powered-on",
            "installer-started (bundle verified)",
            "installer-started (copying the OS)",
            "disk-written",
            "media-ejected",
            "first-boot",
            "join-started",
            "join-step (join the site)",
            "joined",
            "join-step (install and configure the compute services)",
        ]
    );
    assert_eq!(r.site, "edge1");
    assert_eq!(r.token_id.as_deref(), tok.split('.').next());

    // Once joined, the token no longer speaks for the host; its secret does.
    let before = snapshot(&cp);
    let e = client()
        .report(&tok, &report(host, Phase::JoinStep))
        .unwrap_err();
    let e = format!("{e:#}");
    assert!(
        e.contains("refused the report (token-unknown)") && e.contains("node secret"),
        "{e}"
    );
    let e = client()
        .report("wrong", &report(host, Phase::JoinStep))
        .unwrap_err();
    assert!(format!("{e:#}").contains("token-unknown"), "{e:#}");
    assert_eq!(snapshot(&cp), before, "the refusals wrote nothing");
    let ack = client()
        .report(&reply.node_secret, &report(host, Phase::Failed))
        .unwrap();
    assert_eq!(ack.phase, Phase::Failed);
    let r = record(&cp, host);
    assert_eq!(r.last_error.unwrap().phase, Some(Phase::JoinStep));
}

#[test]
fn refusals_write_nothing_and_what_is_kept_is_bounded_and_escaped() {
    let cp = ControlPlane::start(join_server::serve);
    let reg = Registry::new(&cp.files);
    let tok = token(&reg, "edge1", 3600, 2).expose_full();
    let client = JoinClient::new(&cp.endpoint, cp.ca.cert_pem()).unwrap();
    client
        .report(&tok, &report("a", Phase::InstallerStarted))
        .unwrap();
    client
        .report(&tok, &report("b", Phase::InstallerStarted))
        .unwrap();

    let before = snapshot(&cp);
    let refused = |what: &str, answer: String, status: &str, error: &str| {
        assert!(
            answer.starts_with(&format!("HTTP/1.1 {status}"))
                && answer.contains(&format!("\"error\":\"{error}\"")),
            "{what}: {answer}"
        );
        assert_eq!(snapshot(&cp), before, "{what} wrote nothing");
    };
    // A third host name is one more than the token's maxUses.
    let third = serde_json::to_vec(&report("c", Phase::InstallerStarted)).unwrap();
    let answer = post(&cp, &tok, &third);
    refused("a third host", answer.clone(), "401", "token-used-up");
    assert!(answer.contains("2 host(s)"), "{answer}");
    // A body over 16 KiB, whatever it holds.
    let mut big = report("a", Phase::Failed);
    big.log = vec!["x".repeat(17 * 1024)];
    refused(
        "17 KiB",
        post(&cp, &tok, &serde_json::to_vec(&big).unwrap()),
        "413",
        "bad-request",
    );
    refused(
        "not JSON",
        post(&cp, &tok, b"{\"hostname\":"),
        "400",
        "bad-request",
    );
    refused(
        "an unknown field",
        post(
            &cp,
            &tok,
            br#"{"hostname":"a","phase":"first-boot","token":"x"}"#,
        ),
        "400",
        "bad-request",
    );
    refused(
        "an unknown phase",
        post(&cp, &tok, br#"{"hostname":"a","phase":"owned"}"#),
        "400",
        "bad-request",
    );
    refused(
        "a phase the centre records",
        post(&cp, &tok, br#"{"hostname":"a","phase":"placed"}"#),
        "400",
        "bad-request",
    );
    refused("no token", post(&cp, "", &third), "401", "token-unknown");

    // Too many and too long log lines, a long detail, escape sequences: the
    // last 20 lines are kept, each cut to 200 characters, and escaped.
    let mut noisy = report("a", Phase::Failed);
    noisy.detail = Some(format!(
        "\u{1b}]0;owned\u{7}\r\nforged line {}",
        "d".repeat(500)
    ));
    noisy.log = (0..40)
        .map(|i| format!("line {i}\u{1b}[2J\u{202e}{}", "l".repeat(300)))
        .collect();
    let answer = post(&cp, &tok, &serde_json::to_vec(&noisy).unwrap());
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let r = record(&cp, "a");
    let e = r.last_error.unwrap();
    assert!(
        e.reason
            .starts_with("\\u{1b}]0;owned\\u{7}\\r\\nforged line ddd"),
        "{}",
        e.reason
    );
    assert_eq!(e.reason.chars().count(), 200);
    assert_eq!(e.log.len(), 20);
    assert!(
        e.log[0].starts_with("line 20\\u{1b}[2J\\u{202e}lll"),
        "{}",
        e.log[0]
    );
    assert!(e.log.iter().all(|l| l.chars().count() <= 200));
    let file = std::fs::read_to_string(cp.dir.path().join("var/lib/dcn/progress/a.json")).unwrap();
    assert!(
        !file.contains("\\u001b") && !file.contains('\u{202e}'),
        "{file}"
    );
    assert!(file.len() < 16 * 1024);
}

#[test]
fn reports_never_hold_up_the_work_and_a_lasting_phase_is_repeated() {
    // A "join service" that accepts connections and never answers.
    let mute = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let ca = dcn::pki::CertificateAuthority::generate("test CA").unwrap();
    let endpoint = format!("https://{}", mute.local_addr().unwrap());
    let r = Reporter::new(
        JoinClient::new(&endpoint, ca.cert_pem()).unwrap(),
        "n1",
        Secret::new("x"),
        Duration::from_millis(100),
    );
    let t = Instant::now();
    for _ in 0..100 {
        r.phase(Phase::InstallerStarted, Some("copying the OS"));
    }
    r.failed("it broke", vec!["last line".into()]);
    assert!(
        t.elapsed() < Duration::from_millis(500),
        "{:?}",
        t.elapsed()
    );
    let t = Instant::now();
    r.finish(Duration::from_secs(1));
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
    drop(mute);

    // The real service: a lasting phase is sent again every heartbeat,
    // renewing the last report's time without a new entry.
    let cp = ControlPlane::start(join_server::serve);
    let tok = cp.token.expose_full();
    let r = Reporter::new(
        JoinClient::new(&cp.endpoint, cp.ca.cert_pem()).unwrap(),
        "n2",
        Secret::new(tok),
        Duration::from_millis(400),
    );
    r.phase(Phase::InstallerStarted, Some("copying the OS"));
    std::thread::sleep(Duration::from_millis(2600));
    r.finish(Duration::from_secs(10));
    let rec = record(&cp, "n2");
    assert_eq!(rec.history.len(), 1, "{rec:?}");
    let first = dcn::timefmt::parse_rfc3339(&rec.history[0].at).unwrap();
    let last = dcn::timefmt::parse_rfc3339(&rec.updated_at).unwrap();
    assert!(
        last.duration_since(first).unwrap() >= Duration::from_secs(2),
        "heartbeats renewed the report: {rec:?}"
    );
}
