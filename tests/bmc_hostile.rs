//! What `dcn bmc` does when the BMC (or whatever answers at its address) is
//! hostile, through the real binary against tests/support/hostile_bmc.rs:
//! redirects never carry the password off the pinned https origin, answers
//! are read up to a cap (memory and time stay bounded), collections are
//! bounded, and BMC text reaches the terminal escaped, without the
//! password, and cut to a line however long it is. Every run also checks
//! that the password never shows.

#[path = "support/hostile_bmc.rs"]
mod hostile_bmc;

use hostile_bmc::{Answer, CD, HostileBmc, PASSWORD, SYSTEM, basic_token};
use serde_json::json;
use std::time::Duration;

/// Peak memory allowed to a `dcn bmc` run facing a hostile answer (it uses
/// about 15 MiB against a well-behaved one).
const PEAK_KIB: u64 = 96 * 1024;

/// A named hostile answer.
type Case<F> = (&'static str, F);
/// Page `n`'s `Members@odata.nextLink`.
type NextPage = fn(usize) -> String;

fn status(bmc: &HostileBmc) -> hostile_bmc::Run {
    bmc.dcn(&["bmc", "status"])
}

#[test]
fn redirects_leave_neither_the_origin_nor_tls() {
    // Followed: a redirect within the pinned origin.
    let bmc = HostileBmc::start();
    bmc.on(|r| (r.path == "/redfish/v1/").then(|| Answer::Redirect("/redfish/v1/x".into())));
    bmc.set(
        "/redfish/v1/x",
        json!({"Systems": {"@odata.id": "/redfish/v1/Systems"}}),
    );
    let run = status(&bmc);
    assert!(run.ok, "{run}");

    let port = bmc.port;
    let hostile = [
        // Same host and port, plain HTTP: the probe's finding.
        format!("http://127.0.0.1:{port}/redfish/v1/"),
        // Same socket under another name is another origin.
        format!("https://localhost:{port}/redfish/v1/"),
        format!("https://127.0.0.1:{}/redfish/v1/", port.wrapping_add(1)),
        "https://192.0.2.1/redfish/v1/".to_string(),
    ];
    for to in hostile {
        let bmc = HostileBmc::start();
        let target = to.replace(&port.to_string(), &bmc.port.to_string());
        let t = target.clone();
        bmc.on(move |r| (r.tls && r.path == "/redfish/v1/").then(|| Answer::Redirect(t.clone())));
        let run = status(&bmc);
        assert!(!run.ok, "{target}: {run}");
        let origin = target.trim_end_matches("/redfish/v1/");
        assert!(
            run.stderr.contains("refusing to follow the BMC's redirect")
                && run.stderr.contains(origin)
                && run.stderr.contains("nothing was sent")
                && (origin.starts_with("https:") || run.stderr.contains("to plain HTTP")),
            "{target}: {run}"
        );
        let seen = bmc.seen();
        assert!(
            seen.iter().all(|s| s.tls),
            "{target}: a request reached the BMC's port over plain HTTP: {seen:?}"
        );
        assert_eq!(seen.len(), 1, "{target}: {seen:?}");
    }

    // A redirect loop within the origin ends.
    let bmc = HostileBmc::start();
    bmc.on(|r| Some(Answer::Redirect(format!("{}x", r.path))));
    let run = status(&bmc);
    assert!(!run.ok && run.stderr.contains("redirected GET"), "{run}");
    assert!(bmc.seen().len() <= 7, "{:?}", bmc.seen());
}

#[test]
fn oversized_and_endless_answers_stop_at_the_cap() {
    let cases: [Case<fn() -> Answer>; 4] = [
        ("a 400 MB body", || Answer::Announced(400_000_000)),
        ("an endless chunked body", || Answer::Endless),
        ("6 MiB until the connection closes", || {
            Answer::CloseDelimited(6 << 20)
        }),
        ("a 5 MiB error page", || {
            Answer::Text(500, "<p>".repeat(5 << 19))
        }),
    ];
    for (what, make) in cases {
        for path in ["/redfish/v1/", SYSTEM] {
            let bmc = HostileBmc::start();
            let p = path.to_string();
            bmc.on(move |r| (r.path == p).then(make));
            let run = status(&bmc);
            assert!(!run.ok, "{what} at {path}: {run}");
            assert!(
                run.stderr
                    .contains(&format!("to GET {path} is larger than 4 MiB"))
                    && run.stderr.contains("dcn stopped reading it"),
                "{what} at {path}: {run}"
            );
            assert!(
                run.took < Duration::from_secs(15),
                "{what} at {path}: took {:?}",
                run.took
            );
            assert!(
                run.peak_kib < PEAK_KIB,
                "{what} at {path}: {} KiB resident",
                run.peak_kib
            );
        }
    }
}

#[test]
fn bmc_text_is_printed_escaped_and_without_the_password() {
    let bmc = HostileBmc::start();
    let forged = "\npower:          On\r\u{1b}[2J\u{1b}]0;owned\u{7}";
    bmc.edit(SYSTEM, |v| {
        v["Name"] = json!(format!("node-0{forged}"));
        v["PowerState"] = json!("Off\u{1b}[8m\u{202e}");
    });
    bmc.edit(CD, |v| {
        v["Image"] = json!(format!("http://x/{PASSWORD}.iso\r"));
        v["Inserted"] = json!(true);
    });
    let run = status(&bmc);
    assert!(run.ok, "{run}");
    for c in ['\u{1b}', '\r', '\u{7}', '\u{202e}'] {
        assert!(!run.stdout.contains(c), "{c:?} printed raw:\n{run}");
    }
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(
        lines.iter().filter(|l| l.starts_with("power:")).count(),
        1,
        "a forged line:\n{run}"
    );
    assert!(
        run.stdout.contains("node-0\\npower:")
            && run.stdout.contains("Off\\u{1b}[8m\\u{202e}")
            && run.stdout.contains("http://x/[redacted].iso\\r"),
        "{run}"
    );
    // JSON output is escaped by JSON itself, and redacted too.
    let run = bmc.dcn(&["bmc", "status", "--output", "json"]);
    assert!(run.ok && !run.stdout.contains('\u{1b}'), "{run}");

    // Error texts: the password, in clear or as the Basic token, and
    // control characters, as a BMC might echo them.
    let token = basic_token();
    let bodies = [
        json!({"error": {"code": "Base.1.8.GeneralError", "message": format!("login {PASSWORD} refused\u{1b}[2J"),
            "@Message.ExtendedInfo": [{"MessageId": "Base.1.8.X\u{1b}[31m", "Message": format!("Authorization: Basic {token}"),
            "MessageArgs": [PASSWORD]}]}})
        .to_string(),
        format!("<html><body>bad password {PASSWORD}\u{1b}]0;x\u{7}</body></html>"),
        format!("{{\"error\": \"{}\"}}", token.trim_end_matches('=')),
    ];
    for body in bodies {
        let bmc = HostileBmc::start();
        let b = body.clone();
        bmc.on(move |r| (r.path == SYSTEM).then(|| Answer::Text(400, b.clone())));
        let run = status(&bmc);
        assert!(
            !run.ok && run.stderr.contains("400 Bad Request"),
            "{body}: {run}"
        );
        assert!(
            !run.stderr.contains('\u{1b}') && !run.stderr.contains('\u{7}'),
            "{run}"
        );
        assert!(
            run.stderr.contains("[redacted]") || !body.contains("{\"error\": {"),
            "{run}"
        );
    }
}

#[test]
fn collections_are_bounded() {
    // Thousands of systems: refused after one read, not thousands.
    let bmc = HostileBmc::start();
    let many: Vec<_> = (0..5000)
        .map(|i| json!({"@odata.id": format!("/redfish/v1/Systems/{i}")}))
        .collect();
    bmc.edit("/redfish/v1/Systems", |v| v["Members"] = json!(many));
    let run = status(&bmc);
    assert!(
        !run.ok && run.stderr.contains("lists more than 1024 members"),
        "{run}"
    );
    assert!(bmc.seen().len() <= 3, "{} requests", bmc.seen().len());

    // Pages that lead back to themselves, and pages without end.
    let pagings: [Case<NextPage>; 2] = [
        ("loop", |_: usize| "/redfish/v1/Systems".to_string()),
        ("endless", |i: usize| {
            format!("/redfish/v1/Systems?page={}", i + 1)
        }),
    ];
    for (what, next) in pagings {
        let bmc = HostileBmc::start();
        bmc.on(move |r| {
            let page: usize = r
                .path
                .split_once("?page=")
                .map_or(0, |(_, n)| n.parse().unwrap());
            r.path.starts_with("/redfish/v1/Systems").then(|| {
                Answer::Json(
                    200,
                    json!({"Members": [], "Members@odata.nextLink": next(page)}),
                )
            })
        });
        let run = status(&bmc);
        let expected = if what == "loop" {
            "links back to its page"
        } else {
            "more than 32 pages"
        };
        assert!(!run.ok && run.stderr.contains(expected), "{what}: {run}");
        assert!(
            bmc.seen().len() <= 34,
            "{what}: {} requests",
            bmc.seen().len()
        );
    }

    // A paged collection is read to its end: the system is on page 2.
    let bmc = HostileBmc::start();
    bmc.set(
        "/redfish/v1/Systems",
        json!({"Members": [], "Members@odata.nextLink": "/redfish/v1/Systems?page=2"}),
    );
    bmc.set(
        "/redfish/v1/Systems?page=2",
        json!({"Members": [{"@odata.id": SYSTEM}]}),
    );
    let run = status(&bmc);
    assert!(run.ok && run.stdout.contains("node-0"), "{run}");
}

#[test]
fn certificate_names_are_printed_escaped() {
    let bmc = HostileBmc::start_named("bmc\u{1b}[2J\u{1b}]0;owned\u{7}", "evil\u{1b}[8m.example");
    let run = hostile_bmc::run_dcn(&["bmc", "fingerprint", "--bmc", &bmc.url]);
    assert!(run.ok, "{run}");
    assert!(
        !run.stdout.contains('\u{1b}') && !run.stdout.contains('\u{7}'),
        "{run}"
    );
    assert!(
        run.stdout.contains("\\u{1b}[2J") && run.stdout.contains("evil\\u{1b}[8m.example"),
        "{run}"
    );
}

#[test]
fn a_name_of_100_kb_prints_a_bounded_line() {
    // Two systems, one named with 100 KB (multi-byte, with escapes): the
    // list of systems once used its length as a format width and panicked.
    let bmc = HostileBmc::start();
    let other = format!("{SYSTEM}-2");
    let long = format!("\u{1b}[2J{}", "ñ".repeat(100 * 1024));
    let mut second = bmc.resource(SYSTEM);
    second["Id"] = json!("node-1");
    second["Name"] = json!(long);
    bmc.set(&other, second);
    bmc.edit("/redfish/v1/Systems", |v| {
        v["Members"] = json!([{ "@odata.id": SYSTEM }, { "@odata.id": other }])
    });
    let bounded = |text: &str| text.lines().all(|l| l.chars().count() <= 600);

    let run = status(&bmc);
    assert!(!run.ok && !run.stderr.contains("panicked"), "{run}");
    assert!(
        run.stderr
            .contains("the BMC manages 2 systems; say which with --system ID"),
        "{run}"
    );
    let listed = run.stderr.lines().find(|l| l.contains("node-1")).unwrap();
    assert!(
        listed.starts_with("  node-1 ") && listed.contains("ñ…  power Off"),
        "{listed}"
    );
    assert!(
        bounded(&run.stderr) && !run.stderr.contains('\u{1b}'),
        "{run}"
    );

    // Chosen, it is shown cut; the JSON has it whole.
    let run = bmc.dcn(&["bmc", "status", "--system", "node-1"]);
    assert!(run.ok, "{run}");
    assert!(
        run.stdout
            .starts_with("system:         node-1 (\\u{1b}[2Jñ"),
        "{run}"
    );
    assert!(bounded(&run.stdout), "{run}");
    let run = bmc.dcn(&["bmc", "status", "--system", "node-1", "--output", "json"]);
    assert!(
        run.ok && run.stdout.contains(&"ñ".repeat(100 * 1024)),
        "{run}"
    );
}
