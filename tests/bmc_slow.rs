//! A BMC (or whatever answers at its address) that answers slowly on
//! purpose: a body one byte every 0.3 s, no headers at all, a TLS handshake
//! that trickles in. Each read is quick, so only a deadline on the whole
//! call ends it: `dcn bmc` must give up close to `--timeout`, and a wait
//! (for a power state) close to its own limit, however slowly each call
//! is answered. The site deploy's phases are in tests/site_deploy_slow_bmc.rs.

#[path = "support/hostile_bmc.rs"]
mod hostile_bmc;

use dcn::bmc::{Client, ClientOptions, Deadline, Retry};
use dcn::secrets::Secret;
use hostile_bmc::{Answer, HostileBmc, PASSWORD, SYSTEM, USER};
use std::io::{Read, Write};
use std::net::TcpListener;
use std::time::{Duration, Instant};

const DRIP: Duration = Duration::from_millis(300);

/// `dcn bmc status --timeout 2` against `bmc`.
fn status(bmc: &HostileBmc) -> hostile_bmc::Run {
    hostile_bmc::run_dcn(&[
        "bmc",
        "status",
        "--bmc",
        &bmc.url,
        "--username",
        USER,
        "--bmc-pin",
        &bmc.pin,
        "--timeout",
        "2",
    ])
}

/// Under three times `--timeout 2`, with room for a slow test machine.
const BOUND: Duration = Duration::from_secs(6);

#[test]
fn a_body_that_trickles_in_ends_at_the_timeout() {
    for path in ["/redfish/v1/", SYSTEM] {
        let bmc = HostileBmc::start();
        let body = bmc.resource(path);
        let p = path.to_string();
        bmc.on(move |r| (r.path == p).then(|| Answer::Drip(body.clone(), DRIP)));
        let run = status(&bmc);
        assert!(!run.ok, "{path}: {run}");
        assert!(run.took < BOUND, "{path}: took {:?}\n{run}", run.took);
        let said = format!(
            "the BMC at {}/ did not finish sending its answer to GET {path} within 2s in all",
            bmc.url
        );
        assert!(run.stderr.contains(&said), "{path}: {run}");
        assert!(
            run.stderr.contains("received by then")
                && run.stderr.contains("check it")
                && run.stderr.contains("raise --timeout"),
            "{path}: {run}"
        );
        assert!(!run.stderr.contains("panicked"), "{run}");
    }
}

#[test]
fn headers_that_never_come_end_at_the_timeout() {
    let bmc = HostileBmc::start();
    bmc.on(|r| (r.path == SYSTEM).then_some(Answer::Silence));
    let run = status(&bmc);
    assert!(!run.ok, "{run}");
    assert!(run.took < BOUND, "took {:?}\n{run}", run.took);
    assert!(
        run.stderr.contains(&format!(
            "did not answer GET {SYSTEM} within 2s in all: no status and headers by then"
        )) && run.stderr.contains("raise --timeout"),
        "{run}"
    );
    // Not retried: the time is gone.
    let asked = bmc.seen().iter().filter(|s| s.path == SYSTEM).count();
    assert_eq!(asked, 1, "{:?}", bmc.seen());
}

/// A server that reads the ClientHello, then sends a TLS record header
/// announcing 16 KiB and one byte of it every 0.3 s.
fn trickling_tls_handshake() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut s = stream;
                let mut hello = [0u8; 4096];
                let _ = s.read(&mut hello);
                if s.write_all(&[0x16, 0x03, 0x03, 0x40, 0x00]).is_err() {
                    return;
                }
                for _ in 0..1000 {
                    std::thread::sleep(DRIP);
                    if s.write_all(&[0x02]).is_err() {
                        return;
                    }
                }
            });
        }
    });
    port
}

#[test]
fn a_tls_handshake_that_trickles_in_ends_at_the_timeout() {
    let port = trickling_tls_handshake();
    let url = format!("https://127.0.0.1:{port}");
    let pin = format!("sha256:{}", "0".repeat(64));
    let run = hostile_bmc::run_dcn(&[
        "bmc",
        "status",
        "--bmc",
        &url,
        "--username",
        USER,
        "--bmc-pin",
        &pin,
        "--timeout",
        "2",
    ]);
    assert!(!run.ok, "{run}");
    assert!(run.took < BOUND, "took {:?}\n{run}", run.took);
    assert!(
        run.stderr
            .contains("did not answer GET /redfish/v1/ within 2s in all"),
        "{run}"
    );

    let run = hostile_bmc::run_dcn(&["bmc", "fingerprint", "--bmc", &url, "--timeout", "2"]);
    assert!(!run.ok, "{run}");
    assert!(run.took < BOUND, "took {:?}\n{run}", run.took);
    assert!(
        run.stderr.contains(&format!(
            "127.0.0.1 port {port} did not complete its TLS handshake within 2s in all"
        )),
        "{run}"
    );
}

fn client(bmc: &HostileBmc, timeout: Duration) -> Client {
    Client::new(&ClientOptions {
        url: bmc.url.clone(),
        username: USER.into(),
        password: Secret::new(PASSWORD),
        trust: dcn::tls::ServerTrust::Pin(bmc.pin.parse().unwrap()),
        timeout,
        timeout_from: Some("--timeout".into()),
        retry: Retry::default(),
        credentials_from: "the test's user".into(),
    })
    .unwrap()
}

#[test]
fn the_client_bounds_each_call_and_a_stretch_bounds_its_calls() {
    let bmc = HostileBmc::start();
    let body = bmc.resource(SYSTEM);
    bmc.on(move |r| (r.path == SYSTEM).then(|| Answer::Drip(body.clone(), DRIP)));

    // The call's own limit.
    let c = client(&bmc, Duration::from_secs(2));
    let t = Instant::now();
    let err = c.get::<serde_json::Value>(SYSTEM).unwrap_err();
    assert!(t.elapsed() < BOUND, "took {:?}", t.elapsed());
    assert!(format!("{err:#}").contains("within 2s in all"), "{err:#}");
    // Quick answers are not held up.
    assert!(c.get::<serde_json::Value>("/redfish/v1/").is_ok());

    // A stretch with 2 s left caps a call allowed 60 s.
    let c = client(&bmc, Duration::from_secs(60));
    let stretch =
        Deadline::after(Duration::from_secs(2), "the wait for the test").set_by("--test-timeout");
    let within = c.within(&stretch);
    let t = Instant::now();
    let err = format!("{:#}", within.get::<serde_json::Value>(SYSTEM).unwrap_err());
    assert!(t.elapsed() < BOUND, "took {:?}", t.elapsed());
    assert!(
        err.contains("the time left of the wait for the test (2s)")
            && err.contains("raise --test-timeout"),
        "{err}"
    );
    // Once it passed, nothing more is sent.
    let asked = bmc.seen().len();
    let err = format!(
        "{:#}",
        within.get::<serde_json::Value>("/redfish/v1/").unwrap_err()
    );
    assert!(
        err.contains("no time was left of the wait for the test"),
        "{err}"
    );
    assert_eq!(bmc.seen().len(), asked);
}

#[test]
fn a_power_wait_ends_at_its_limit_however_slow_each_read() {
    let bmc = HostileBmc::start();
    let body = bmc.resource(SYSTEM);
    let reset = format!("{SYSTEM}/Actions/ComputerSystem.Reset");
    let mut reset_asked = false;
    bmc.on(move |r| {
        if r.path == reset {
            reset_asked = true;
            return Some(Answer::Json(200, serde_json::json!({})));
        }
        // Once the power was asked for, the system trickles in.
        (reset_asked && r.path == SYSTEM).then(|| Answer::Drip(body.clone(), DRIP))
    });
    let started = Instant::now();
    let run = hostile_bmc::run_dcn(&[
        "bmc",
        "power",
        "on",
        "--bmc",
        &bmc.url,
        "--username",
        USER,
        "--bmc-pin",
        &bmc.pin,
        "--power-timeout",
        "3",
    ]);
    assert!(!run.ok, "{run}");
    assert!(
        started.elapsed() < Duration::from_secs(9),
        "took {:?}\n{run}",
        started.elapsed()
    );
    assert!(
        run.stderr.contains("waiting for power On")
            && run
                .stderr
                .contains("the time left of the wait for power On (3s)")
            && run.stderr.contains("raise --power-timeout"),
        "{run}"
    );
}
