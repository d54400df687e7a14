//! `dcn bmc`'s TLS checks, credentials, system choice and power against a
//! real Redfish service: the sushy-tools emulator (fake
//! driver, TLS with a certificate made here, bcrypt basic auth) on
//! 127.0.0.1, fetching a small ISO from `dcn image serve` on 127.0.0.1.
//! Every assertion about the BMC's state is made through the emulator's own
//! Redfish API, not through dcn.
//!
//! The emulator runs from a virtualenv made on first use (about 5 s) in
//! /var/cache/dcn-test/sushy-venv, or ~/.cache/dcn-test/sushy-venv when that
//! is not writable, or $DCN_SUSHY_VENV. If it cannot be made (no network,
//! no python3-venv) the tests fail and say why: they never pass without
//! running. Each test starts its own emulator with a fresh state
//! directory (the emulator keeps state across restarts) and kills it by PID.

#[path = "support/sushy_emulator.rs"]
mod sushy_emulator;

use serde_json::Value;
use std::time::Instant;
use sushy_emulator::*;

#[test]
fn tls_credentials_and_system_choice_are_checked() {
    let started = Instant::now();
    let emu = Emulator::start(TWO_SYSTEMS, "full");

    // The fingerprint is what the server holds.
    let run = dcn(
        &["bmc", "fingerprint", "--bmc", &emu.url, "--output", "json"],
        &[],
    );
    assert!(run.ok, "{run}");
    let fp: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(fp["pin"], emu.pin.as_str());
    use sha2::Digest;
    let sha = hex::encode_upper(sha2::Sha256::digest(&emu.cert_der));
    assert_eq!(
        fp["sha256_fingerprint"].as_str().unwrap().replace(':', ""),
        sha
    );

    // A wrong pin: refused during the handshake, before any request.
    let before = emu.requests_logged();
    assert!(
        before > 0,
        "the emulator logs each request (the readiness checks at least)"
    );
    let wrong = format!("sha256:{}", "ab".repeat(32));
    let run = emu.dcn(&["status", "--system", NODE0], &["--bmc-pin", &wrong]);
    assert!(!run.ok);
    assert!(
        run.stderr.contains(&format!(
            "its certificate's public key is {}, not the pinned {wrong}",
            emu.pin
        )),
        "{run}"
    );
    assert!(run.stderr.contains("nothing was sent to it"), "{run}");
    assert_eq!(
        emu.requests_logged(),
        before,
        "no HTTP request may reach a refused BMC"
    );

    // Default trust (the system's CAs, here a bundle without the test CA):
    // refused, with the pin to check.
    let other = dcn::pki::CertificateAuthority::generate("some other CA").unwrap();
    let bundle = emu.dir.path().join("bundle.crt");
    std::fs::write(&bundle, other.cert_pem()).unwrap();
    let pw = emu.password_file.to_string_lossy().into_owned();
    let run = dcn(
        &[
            "bmc",
            "status",
            "--system",
            NODE0,
            "--bmc",
            &emu.url,
            "--username",
            USER,
            "--password-file",
            &pw,
        ],
        &[("SSL_CERT_FILE", bundle.to_str().unwrap())],
    );
    assert!(!run.ok);
    assert!(
        run.stderr.contains("its certificate is not trusted"),
        "{run}"
    );
    assert!(
        run.stderr.contains(&format!("it presented {}", emu.pin)),
        "{run}"
    );

    // --bmc-ca: trusted.
    let run = emu.dcn(
        &["status", "--system", NODE0],
        &["--bmc-ca", emu.ca_file.to_str().unwrap()],
    );
    assert!(run.ok, "{run}");
    assert!(run.stdout.contains("power:          Off"), "{run}");

    // --insecure works, and says so.
    let run = emu.dcn(&["status", "--system", NODE0], &["--insecure"]);
    assert!(run.ok, "{run}");
    assert!(
        run.stderr
            .contains("warning: --insecure: the BMC's certificate is not checked"),
        "{run}"
    );
    assert!(
        run.stderr
            .contains(&format!("pass --bmc-pin {} instead of --insecure", emu.pin)),
        "{run}"
    );

    // A wrong password: the emulator's 401, in plain words.
    let run = dcn(
        &[
            "bmc",
            "status",
            "--system",
            NODE0,
            "--bmc",
            &emu.url,
            "--username",
            USER,
            "--bmc-pin",
            &emu.pin,
        ],
        &[("DCN_BMC_PASSWORD", "wrong-password")],
    );
    assert!(!run.ok);
    assert!(
        run.stderr
            .contains("refused the user name or password of \"admin\""),
        "{run}"
    );
    assert!(run.stderr.contains("401 Unauthorized"), "{run}");
    assert!(
        run.stderr.contains("Incorrect username or password"),
        "{run}"
    );
    assert!(!run.stderr.contains("wrong-password"), "{run}");

    // Two systems and no --system: listed, nothing done.
    let run = emu.dcn(
        &["boot", "--iso-url", "http://127.0.0.1:9/x.iso"],
        &emu.pinned(),
    );
    assert!(!run.ok);
    assert!(
        run.stderr
            .contains("the BMC manages 2 systems; say which with --system ID"),
        "{run}"
    );
    assert!(
        run.stderr.contains(NODE0) && run.stderr.contains(NODE1),
        "{run}"
    );
    assert!(
        run.stderr.contains("node-1") && run.stderr.contains("power On"),
        "{run}"
    );
    assert_eq!(emu.cd(NODE0)["Inserted"], false);

    // A system that does not exist.
    let run = emu.dcn(&["status", "--system", "does-not-exist"], &emu.pinned());
    assert!(!run.ok);
    assert!(
        run.stderr
            .contains("the BMC has no system \"does-not-exist\"; it has:"),
        "{run}"
    );
    eprintln!(
        "tls_credentials_and_system_choice_are_checked: {:.1}s",
        started.elapsed().as_secs_f64()
    );
}

#[test]
fn power_off_waits_for_the_new_state() {
    let started = Instant::now();
    let emu = Emulator::start(TWO_SYSTEMS, "full");
    let run = emu.dcn(
        &[
            "power",
            "off",
            "--system",
            "node-1",
            "--power-timeout",
            "30",
        ],
        &emu.pinned(),
    );
    assert!(run.ok, "{run}");
    assert!(
        run.stdout.contains(&format!(
            "System {NODE1} (node-1): ForceOff done, power Off after"
        )),
        "{run}"
    );
    assert_eq!(emu.system(NODE1)["PowerState"], "Off");
    eprintln!(
        "power_off_waits_for_the_new_state: {:.1}s",
        started.elapsed().as_secs_f64()
    );
}
