//! Virtual media quirks of real BMCs, through the real `dcn bmc` binary
//! against the quirky BMC of tests/support/quirky_bmc.rs: each test changes
//! one thing and checks what dcn sent and what it told the operator.

#[path = "support/quirky_bmc.rs"]
mod quirky_bmc;

use quirky_bmc::*;
use serde_json::json;

#[test]
fn supermicro_refusing_inserted_gets_the_image_only() {
    let bmc = MockBmc::start();
    bmc.on(|r, _| {
        (r.is("POST", INSERT) && r.json().get("Inserted").is_some())
            .then(|| error(400, "quirks/a-supermicro-insert-inserted-rejected.400.json"))
            .flatten()
    });
    let run = boot(&bmc, &[]);
    assert!(run.ok, "{run}");
    let inserts = bmc.requests("POST", INSERT);
    assert_eq!(inserts.len(), 2);
    assert_eq!(inserts[1].json(), json!({"Image": ISO}));
    assert!(run.stderr.contains("Supermicro X11/X12"), "{run}");
    assert!(
        run.stderr
            .contains("The property Inserted is not in the list"),
        "{run}"
    );
}

#[test]
fn dell_refusing_write_protected_gets_the_image_only() {
    let bmc = MockBmc::start();
    bmc.on(|r, _| {
        (r.is("POST", INSERT) && r.json().get("WriteProtected").is_some())
            .then(|| {
                error(
                    400,
                    "quirks/a-dell-idrac-insert-writeprotected-value.400.json",
                )
            })
            .flatten()
    });
    let run = boot(&bmc, &[]);
    assert!(run.ok, "{run}");
    assert_eq!(
        bmc.requests("POST", INSERT)[1].json(),
        json!({"Image": ISO})
    );
    assert!(run.stderr.contains("Dell iDRAC"), "{run}");
}

#[test]
fn ami_requiring_transfer_protocol_type_gets_it() {
    for (body, url, proto) in [
        (
            "quirks/b-ami-insert-transferprotocoltype-missing.400.json",
            ISO,
            "HTTP",
        ),
        (
            "quirks/b-generalerror-transferprotocoltype-missing.400.json",
            "https://192.0.2.10/edge.iso",
            "HTTPS",
        ),
    ] {
        let bmc = MockBmc::start();
        bmc.on(move |r, _| {
            (r.is("POST", INSERT) && r.json().get("TransferProtocolType").is_none())
                .then(|| error(400, body))
                .flatten()
        });
        let run = bmc.dcn(&["bmc", "boot", "--iso-url", url, "--power-timeout", "5"]);
        assert!(run.ok, "{body}: {run}");
        let inserts = bmc.requests("POST", INSERT);
        assert_eq!(inserts.len(), 2, "{body}");
        assert_eq!(
            inserts[1].json(),
            json!({"Image": url, "Inserted": true, "WriteProtected": true, "TransferProtocolType": proto})
        );
        assert!(run.stderr.contains("AMI MegaRAC"), "{run}");
    }
}

#[test]
fn hpe_eject_gets_an_empty_json_body() {
    let bmc = MockBmc::start();
    insert_cd(&bmc, "http://192.0.2.10/old.iso");
    // iLO: 415 unless the body is JSON.
    bmc.on(|r, _| {
        let json_body = r.header("Content-Type") == Some("application/json") && r.body == "{}";
        (r.is("POST", EJECT) && !json_body)
            .then(|| error(415, "quirks/c-hpe-ilo-eject-without-body.415.json"))
            .flatten()
    });
    let run = bmc.dcn(&["bmc", "eject"]);
    assert!(run.ok, "{run}");
    assert!(
        run.stdout
            .contains("Ejected http://192.0.2.10/old.iso from virtual media Cd"),
        "{run}"
    );
    assert_eq!(bmc.requests("POST", EJECT).len(), 1);
    assert_eq!(bmc.get(CD)["Inserted"], false);
    // The sushy-tools system reads back a Continuous override to Hdd: left alone.
    assert!(bmc.requests("PATCH", SYSTEM).is_empty());
}

#[test]
fn eject_clears_a_boot_override_to_the_cd() {
    let bmc = MockBmc::start();
    insert_cd(&bmc, ISO);
    bmc.edit(SYSTEM, |v| {
        v["Boot"]["BootSourceOverrideTarget"] = json!("Cd")
    });
    let run = bmc.dcn(&["bmc", "eject"]);
    assert!(run.ok, "{run}");
    assert!(
        run.stdout
            .contains("Boot override to Cd (Continuous) cleared"),
        "{run}"
    );
    assert_eq!(bmc.get(SYSTEM)["Boot"]["BootSourceOverrideTarget"], "None");
    let run = bmc.dcn(&["bmc", "eject"]);
    assert!(run.ok && run.stdout.contains("was already empty"), "{run}");
}

#[test]
fn dell_insert_failing_right_after_an_eject_is_retried() {
    let bmc = MockBmc::start();
    insert_cd(&bmc, "http://192.0.2.10/old.iso");
    let mut failed = false;
    bmc.on(move |r, _| {
        if r.is("POST", INSERT) && !failed {
            failed = true;
            return error(
                500,
                "quirks/d-dell-idrac-insert-while-eject-in-progress.500.json",
            );
        }
        None
    });
    let run = boot(&bmc, &[]);
    assert!(run.ok, "{run}");
    assert_eq!(bmc.requests("POST", EJECT).len(), 1);
    assert_eq!(bmc.requests("POST", INSERT).len(), 2);
    assert!(
        run.stderr
            .contains("Dell iDRAC does this while a previous eject is still finishing"),
        "{run}"
    );
    assert!(run.stderr.contains("attempt 2 of 3"), "{run}");
}

#[test]
fn insert_gives_up_after_three_server_errors_and_says_what_was_changed() {
    let bmc = MockBmc::start();
    insert_cd(&bmc, "http://192.0.2.10/old.iso");
    bmc.on(|r, _| {
        r.is("POST", INSERT)
            .then(|| {
                error(
                    500,
                    "quirks/d-dell-idrac-insert-while-eject-in-progress.500.json",
                )
            })
            .flatten()
    });
    let run = boot(&bmc, &[]);
    assert!(!run.ok, "{run}");
    assert_eq!(bmc.requests("POST", INSERT).len(), 3, "bounded");
    for want in [
        "Boot stopped: dcn changed the BMC: ejected http://192.0.2.10/old.iso from Cd; not done: insert the image, set the boot override, power on or reset.",
        "the BMC could not insert the image into virtual media Cd",
        "check that the BMC (not only this machine) can reach it",
        "The requested operation cannot be completed because of an internal error.",
    ] {
        assert!(run.stderr.contains(want), "{want}\n{run}");
    }
    assert!(bmc.requests("PATCH", SYSTEM).is_empty());
    assert!(bmc.requests("POST", RESET).is_empty());
}

#[test]
fn an_etag_is_sent_as_if_match() {
    let bmc = MockBmc::start();
    bmc.state
        .lock()
        .unwrap()
        .etags
        .insert(SYSTEM.into(), "W/\"1700000001\"".into());
    bmc.on(|r, _| {
        (r.is("PATCH", SYSTEM) && r.header("If-Match") != Some("W/\"1700000001\""))
            .then(|| error(412, "sushy/system-404.json"))
            .flatten()
    });
    let run = boot(&bmc, &[]);
    assert!(run.ok, "{run}");
    assert_eq!(bmc.requests("PATCH", SYSTEM).len(), 1);
}

#[test]
fn virtual_media_under_the_manager_is_found() {
    let bmc = MockBmc::start();
    let coll = format!("{MANAGER}/VirtualMedia");
    let cd = format!("{coll}/CD1");
    bmc.edit(SYSTEM, |v| {
        v.as_object_mut().unwrap().remove("VirtualMedia");
    });
    bmc.edit(MANAGER, |v| v["VirtualMedia"] = json!({"@odata.id": coll}));
    bmc.insert_resource(&coll, json!({"Members": [{"@odata.id": cd}]}));
    let mut slot = fixture_json("sushy/vmedia-cd.json");
    slot["Id"] = json!("CD1");
    slot["Actions"]["#VirtualMedia.InsertMedia"]["target"] =
        json!(format!("{cd}/Actions/{INSERT}"));
    slot["Actions"]["#VirtualMedia.EjectMedia"]["target"] = json!(format!("{cd}/Actions/{EJECT}"));
    bmc.insert_resource(&cd, slot);
    let run = boot(&bmc, &[]);
    assert!(run.ok, "{run}");
    assert_eq!(bmc.get(&cd)["Image"], ISO);
}

#[test]
fn no_virtual_media_is_a_clear_error_that_changes_nothing() {
    let bmc = MockBmc::start();
    bmc.edit(SYSTEM, |v| {
        v.as_object_mut().unwrap().remove("VirtualMedia");
    });
    bmc.edit(MANAGER, |v| {
        v.as_object_mut().unwrap().remove("VirtualMedia");
    });
    let run = boot(&bmc, &[]);
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
    // Only a floppy: also no.
    let bmc = MockBmc::start();
    bmc.edit(&format!("{SYSTEM}/VirtualMedia"), |v| {
        v["Members"] = json!([{"@odata.id": format!("{SYSTEM}/VirtualMedia/Floppy")}]);
    });
    bmc.remove(CD);
    let run = boot(&bmc, &[]);
    assert!(!run.ok, "{run}");
    assert!(
        run.stderr
            .contains("take no CD or DVD: Floppy (Floppy, USBStick)"),
        "{run}"
    );
}
