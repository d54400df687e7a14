//! Power, boot and connection quirks of real BMCs, through the real `dcn
//! bmc` binary against the quirky BMC of tests/support/quirky_bmc.rs: each
//! test changes one thing and checks what dcn sent and what it told the
//! operator.

#[path = "support/quirky_bmc.rs"]
mod quirky_bmc;

use quirky_bmc::*;
use serde_json::json;
use std::net::TcpListener;
use std::time::{Duration, Instant};

#[test]
fn boot_against_a_well_behaved_bmc() {
    let bmc = MockBmc::start();
    let run = boot(&bmc, &["-vv"]);
    assert!(run.ok, "{run}");
    assert!(
        run.stdout
            .contains("is booting http://192.0.2.10:8080/edge.iso from virtual media Cd"),
        "{run}"
    );
    assert_eq!(bmc.get(CD)["Image"], ISO);
    let patch = &bmc.requests("PATCH", SYSTEM)[0];
    assert_eq!(
        patch.json(),
        json!({"Boot": {"BootSourceOverrideTarget": "Cd", "BootSourceOverrideEnabled": "Once"}})
    );
    assert_eq!(patch.header("If-Match"), None, "no ETag was given");
    // Off → On: ResetType On, and the insert carried the schema's defaults.
    assert_eq!(
        bmc.requests("POST", RESET)[0].json(),
        json!({"ResetType": "On"})
    );
    assert_eq!(
        bmc.requests("POST", INSERT)[0].json(),
        json!({"Image": ISO, "Inserted": true, "WriteProtected": true})
    );
    assert!(bmc.requests("POST", EJECT).is_empty(), "the CD was empty");
}

#[test]
fn a_bmc_refusing_once_stops_unless_continuous_is_allowed() {
    let bmc = MockBmc::start();
    bmc.on(|r, _| {
        (r.is("PATCH", SYSTEM) && r.body.contains("\"Once\""))
            .then(|| error(400, "quirks/e-boot-override-once-rejected.400.json"))
            .flatten()
    });
    let run = boot(&bmc, &[]);
    assert!(!run.ok, "{run}");
    for want in [
        "refuses a one-time boot override",
        "Pass --allow-continuous",
        "The value Once for the property BootSourceOverrideEnabled is not in the list",
        "Boot stopped: dcn changed the BMC: inserted http://192.0.2.10:8080/edge.iso into Cd; not done: set the boot override, power on or reset.",
    ] {
        assert!(run.stderr.contains(want), "{want}\n{run}");
    }
    assert!(bmc.requests("POST", RESET).is_empty());
    assert_eq!(bmc.get(SYSTEM)["Boot"]["BootSourceOverrideTarget"], "Hdd");

    let run = boot(&bmc, &["--allow-continuous"]);
    assert!(run.ok, "{run}");
    assert!(
        run.stderr.contains("setting a persistent one (Continuous)"),
        "{run}"
    );
    assert!(
        run.stdout.contains("boot override Cd (Continuous)"),
        "{run}"
    );
    assert_eq!(bmc.get(SYSTEM)["Boot"]["BootSourceOverrideTarget"], "Cd");
}

#[test]
fn supermicro_usbcd_is_the_cd_boot_target() {
    let bmc = MockBmc::start();
    bmc.edit(SYSTEM, |v| {
        v["Boot"]["BootSourceOverrideTarget@Redfish.AllowableValues"] =
            json!(["None", "Pxe", "Hdd", "UsbCd", "BiosSetup"]);
    });
    let run = boot(&bmc, &[]);
    assert!(run.ok, "{run}");
    assert_eq!(bmc.get(SYSTEM)["Boot"]["BootSourceOverrideTarget"], "UsbCd");
    assert!(
        run.stderr.contains("as Supermicro X11/X12 BMCs do"),
        "{run}"
    );
}

#[test]
fn hpe_refusing_boot_changes_during_post_is_retried() {
    let bmc = MockBmc::start();
    let mut n = 0;
    bmc.on(move |r, _| {
        if r.is("PATCH", SYSTEM) && n < 1 {
            n += 1;
            return error(400, "quirks/f-hpe-ilo-boot-patch-during-post.400.json");
        }
        None
    });
    let run = boot(&bmc, &[]);
    assert!(run.ok, "{run}");
    assert_eq!(bmc.requests("PATCH", SYSTEM).len(), 2);
    assert!(run.stderr.contains("as HPE iLO does"), "{run}");
}

#[test]
fn dell_idrac10_refusing_power_on_for_a_while_is_retried() {
    let bmc = MockBmc::start();
    let mut n = 0;
    bmc.on(move |r, _| {
        if r.is("POST", RESET) && n < 1 {
            n += 1;
            return error(409, "quirks/g-dell-idrac10-power-on-conflict.409.json");
        }
        None
    });
    let run = boot(&bmc, &[]);
    assert!(run.ok, "{run}");
    assert_eq!(bmc.requests("POST", RESET).len(), 2);
    assert!(run.stderr.contains("as Dell iDRAC 10 does"), "{run}");
    assert_eq!(bmc.get(SYSTEM)["PowerState"], "On");
}

#[test]
fn a_powered_on_server_is_reset_with_an_advertised_type() {
    let bmc = MockBmc::start();
    bmc.edit(SYSTEM, |v| {
        v["PowerState"] = json!("On");
        v["Actions"]["#ComputerSystem.Reset"]["ResetType@Redfish.AllowableValues"] =
            json!(["On", "ForceOff", "GracefulRestart", "PowerCycle"]);
    });
    let run = boot(&bmc, &[]);
    assert!(run.ok, "{run}");
    assert_eq!(
        bmc.requests("POST", RESET)[0].json(),
        json!({"ResetType": "PowerCycle"})
    );

    // The allowed types in an ActionInfo resource (DMTF's other way), and
    // none that powers off and on: refused before anything is asked.
    let bmc = MockBmc::start();
    let info = format!("{SYSTEM}/ResetActionInfo");
    bmc.edit(SYSTEM, |v| {
        v["PowerState"] = json!("On");
        let reset = &mut v["Actions"]["#ComputerSystem.Reset"];
        reset
            .as_object_mut()
            .unwrap()
            .remove("ResetType@Redfish.AllowableValues");
        reset["@Redfish.ActionInfo"] = json!(info);
    });
    bmc.insert_resource(
        &info,
        json!({"Parameters": [{"Name": "ResetType", "AllowableValues": ["On", "ForceOff", "Nmi"]}]}),
    );
    let run = boot(&bmc, &[]);
    assert!(!run.ok, "{run}");
    assert!(
        run.stderr
            .contains("allows no reset type that does this (it allows: On, ForceOff, Nmi"),
        "{run}"
    );
    assert!(run.stderr.contains("not done: power on or reset."), "{run}");
    assert!(bmc.requests("POST", RESET).is_empty());
}

#[test]
fn server_errors_on_reads_are_retried() {
    let bmc = MockBmc::start();
    let mut n = 0;
    bmc.on(move |r, _| {
        if r.is("GET", "/redfish/v1/Systems") && n < 1 {
            n += 1;
            return Some(Resp {
                status: 503,
                body: "<html><body>Service Unavailable</body></html>".into(),
                delay: Duration::ZERO,
            });
        }
        None
    });
    let run = bmc.dcn(&["bmc", "status"]);
    assert!(run.ok, "{run}");
    assert!(
        run.stderr.contains("the BMC answered 503; retrying"),
        "{run}"
    );
    assert!(run.stdout.contains("power:          Off"), "{run}");
}

#[test]
fn wrong_credentials_missing_system_and_slow_bmc_are_clear_errors() {
    let bmc = MockBmc::start();
    let run = dcn(
        &[
            "bmc",
            "status",
            "--bmc",
            &bmc.url,
            "--username",
            USER,
            "--bmc-pin",
            &bmc.pin,
        ],
        &[("DCN_BMC_PASSWORD", "not-the-password")],
    );
    assert!(!run.ok);
    assert!(
        run.stderr
            .contains("refused the user name or password of \"admin\""),
        "{run}"
    );
    assert!(run.stderr.contains("401 Unauthorized"), "{run}");
    assert!(!run.stderr.contains("not-the-password"), "{run}");

    let run = bmc.dcn(&["bmc", "status", "--system", "nope"]);
    assert!(!run.ok);
    assert!(
        run.stderr
            .contains("the BMC has no system \"nope\"; it has:"),
        "{run}"
    );
    assert!(
        run.stderr
            .contains("27946b59-9e44-4fa7-8e91-f3527a1ef094  node-0"),
        "{run}"
    );

    bmc.on(|r, _| {
        r.is("GET", "/redfish/v1/").then(|| Resp {
            status: 200,
            body: "{}".into(),
            delay: Duration::from_secs(3),
        })
    });
    let started = Instant::now();
    let run = bmc.dcn(&["bmc", "status", "--timeout", "1"]);
    assert!(!run.ok);
    assert!(
        run.stderr
            .contains("did not answer GET /redfish/v1/ within 1s"),
        "{run}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "timeouts are not retried"
    );
}

#[test]
fn an_unreachable_bmc_is_a_clear_error() {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("https://127.0.0.1:{port}");
    let pin = format!("sha256:{}", "0".repeat(64));
    let run = dcn(
        &[
            "bmc",
            "status",
            "--bmc",
            &url,
            "--username",
            USER,
            "--bmc-pin",
            &pin,
        ],
        &[("DCN_BMC_PASSWORD", PASSWORD)],
    );
    assert!(!run.ok);
    assert!(
        run.stderr.contains(&format!(
            "cannot connect to the BMC at {url}/ (4 attempt(s))"
        )),
        "{run}"
    );
    assert!(run.stderr.contains("Connection refused"), "{run}");
}

#[test]
fn credentials_are_never_taken_from_the_command_line() {
    let run = dcn(
        &[
            "bmc",
            "status",
            "--bmc",
            "https://admin:hunter2@192.0.2.1",
            "--username",
            USER,
            "--insecure",
        ],
        &[("DCN_BMC_PASSWORD", PASSWORD)],
    );
    assert!(!run.ok);
    assert!(
        run.stderr.contains("--bmc must not carry credentials"),
        "{run}"
    );
    assert!(!run.stderr.contains("hunter2"), "{run}");
    let run = dcn(
        &[
            "bmc",
            "status",
            "--bmc",
            "https://192.0.2.1",
            "--username",
            USER,
            "--insecure",
        ],
        &[],
    );
    assert!(!run.ok);
    assert!(run.stderr.contains("no BMC password"), "{run}");
    let run = dcn(
        &[
            "bmc",
            "status",
            "--bmc",
            "https://192.0.2.1",
            "--password",
            "x",
        ],
        &[],
    );
    assert!(!run.ok);
    assert!(
        run.stderr.contains("unexpected argument '--password'"),
        "{run}"
    );
}
