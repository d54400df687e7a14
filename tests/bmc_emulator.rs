//! `dcn bmc` against a real Redfish service: the sushy-tools emulator (fake
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

use dcn::secrets::Secret;
use serde_json::Value;
use std::time::{Duration, Instant};
use sushy_emulator::*;

#[test]
fn boot_status_eject_pinned() {
    let started = Instant::now();
    let emu = Emulator::start(TWO_SYSTEMS, "full");
    let images = tempfile::tempdir().unwrap();
    let iso = serve_iso(images.path());

    let run = emu.dcn(
        &[
            "boot",
            "--system",
            "node-0",
            "--iso-url",
            &iso,
            "--power-timeout",
            "30",
        ],
        &emu.pinned(),
    );
    assert!(run.ok, "{run}");
    assert!(
        run.stdout.contains(&format!(
            "System {NODE0} (node-0) is booting {iso} from virtual media Cd"
        )),
        "{run}"
    );
    for step in [
        "virtual media Cd (CD, DVD)",
        "Inserted",
        "Boot override: Cd (Once)",
        "Power: asked for On",
    ] {
        assert!(run.stderr.contains(step), "{step}\n{run}");
    }
    // Through the emulator's own API.
    let cd = emu.cd(NODE0);
    assert_eq!(cd["Image"], iso.as_str());
    assert_eq!(cd["Inserted"], true);
    assert_eq!(emu.system(NODE0)["Boot"]["BootSourceOverrideTarget"], "Cd");
    assert_eq!(emu.wait_power(NODE0, "On", Duration::from_secs(20)), "On");
    // The other system was not touched.
    assert_eq!(emu.cd(NODE1)["Inserted"], false);

    // Status, with the password from the environment this time.
    let run = dcn(
        &[
            "bmc",
            "status",
            "--output",
            "json",
            "--bmc",
            &emu.url,
            "--username",
            USER,
            "--system",
            NODE0,
            "--bmc-pin",
            &emu.pin,
        ],
        &[("DCN_BMC_PASSWORD", PASSWORD)],
    );
    assert!(run.ok, "{run}");
    let st: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(st["system"], NODE0);
    assert_eq!(st["power_state"], "On");
    assert_eq!(st["boot"]["target"], "Cd");
    assert_eq!(st["virtual_media"][0]["id"], "Cd");
    assert_eq!(st["virtual_media"][0]["image"], iso.as_str());

    let run = emu.dcn(&["eject", "--system", "node-0"], &emu.pinned());
    assert!(run.ok, "{run}");
    assert!(
        run.stdout
            .contains(&format!("Ejected {iso} from virtual media Cd")),
        "{run}"
    );
    let cd = emu.cd(NODE0);
    assert_eq!(cd["Image"], "");
    assert_eq!(cd["Inserted"], false);
    assert_eq!(
        emu.system(NODE0)["Boot"]["BootSourceOverrideTarget"],
        "None"
    );
    let run = emu.dcn(&["eject", "--system", "node-0"], &emu.pinned());
    assert!(run.ok && run.stdout.contains("already empty"), "{run}");
    eprintln!(
        "boot_status_eject_pinned: {:.1}s",
        started.elapsed().as_secs_f64()
    );
}

#[test]
fn an_image_the_bmc_cannot_fetch_is_reported_with_the_state_left() {
    let started = Instant::now();
    let emu = Emulator::start(TWO_SYSTEMS, "full");
    let url = format!("http://127.0.0.1:{}/edge.iso", free_port());
    let run = emu.dcn(
        &["boot", "--system", NODE0, "--iso-url", &url],
        &emu.pinned(),
    );
    assert!(!run.ok, "{run}");
    for want in [
        "Boot stopped: dcn changed nothing on the BMC; not done: insert the image, set the boot override, power on or reset.",
        "the BMC could not insert the image into virtual media Cd",
        &format!("The BMC fetches {url} itself"),
        "Failed fetching image from URL",
        "Connection refused",
    ] {
        assert!(run.stderr.contains(want), "{want}\n{run}");
    }
    let cd = emu.cd(NODE0);
    assert_eq!(cd["Inserted"], false);
    let sys = emu.system(NODE0);
    assert_eq!(sys["Boot"]["BootSourceOverrideTarget"], "Hdd");
    assert_eq!(sys["PowerState"], "Off");
    eprintln!(
        "an_image_the_bmc_cannot_fetch...: {:.1}s",
        started.elapsed().as_secs_f64()
    );
}

#[test]
fn a_bmc_without_virtual_media_is_refused() {
    let emu = Emulator::start(TWO_SYSTEMS, "minimum");
    let run = emu.dcn(
        &[
            "boot",
            "--system",
            "node-0",
            "--iso-url",
            "http://127.0.0.1:9/x.iso",
        ],
        &emu.pinned(),
    );
    assert!(!run.ok, "{run}");
    assert!(
        run.stderr
            .contains("cannot boot an ISO through this BMC: it has no virtual media"),
        "{run}"
    );
    assert!(
        run.stderr.contains("dcn changed nothing on the BMC"),
        "{run}"
    );
}

/// The media CA goes to the drive once: a second run finds it (compared by
/// its bytes, not by the text the BMC shows) and posts nothing; a drive
/// holding another CA is refused with the way out, not silently kept.
#[test]
fn the_media_ca_is_added_once_and_another_ca_is_not_overwritten() {
    let emu = Emulator::start(TWO_SYSTEMS, "full");
    let client = dcn::bmc::Client::new(&dcn::bmc::ClientOptions {
        url: emu.url.clone(),
        username: USER.into(),
        password: Secret::new(PASSWORD),
        trust: dcn::tls::ServerTrust::Pin(emu.pin.parse().unwrap()),
        timeout: Duration::from_secs(30),
        timeout_from: None,
        retry: dcn::bmc::Retry::default(),
        credentials_from: "the emulator's user".into(),
    })
    .unwrap();
    let ours = dcn::pki::CertificateAuthority::generate("media CA").unwrap();
    let slot_of = |node: &str| {
        let system = dcn::bmc::find_system(&client, Some(node)).unwrap();
        dcn::bmc::cd_slot(&client, &system).unwrap()
    };
    let certs = format!("/redfish/v1/Systems/{NODE0}/VirtualMedia/Cd/Certificates");
    let posts = || {
        std::fs::read_to_string(emu.dir.path().join("emulator.log"))
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains(&format!("POST {certs} HTTP")))
            .count()
    };

    let trust = dcn::bmc::trust_media_ca(&client, &slot_of("node-0"), ours.cert_pem()).unwrap();
    assert_eq!(trust, dcn::bmc::MediaTrust::Verified);
    assert_eq!(emu.cd(NODE0)["VerifyCertificate"], true);
    assert_eq!(emu.get(&certs)["Members"].as_array().unwrap().len(), 1);
    assert_eq!(posts(), 1);

    let again = dcn::bmc::trust_media_ca(&client, &slot_of("node-0"), ours.cert_pem()).unwrap();
    assert_eq!(again, dcn::bmc::MediaTrust::Verified);
    assert_eq!(posts(), 1, "the CA already there was posted again");

    let other = dcn::pki::CertificateAuthority::generate("someone else's CA").unwrap();
    let err = dcn::bmc::trust_media_ca(&client, &slot_of("node-0"), other.cert_pem())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("holds another CA certificate")
            && err.contains(&format!("{certs}/Default"))
            && err.contains("remove it"),
        "{err}"
    );
    let kept = emu.get(&format!("{certs}/Default"));
    assert_eq!(
        dcn::pki::pem_der(kept["CertificateString"].as_str().unwrap()).unwrap(),
        dcn::pki::pem_der(ours.cert_pem()).unwrap()
    );
}
