//! Every refusal of an inventory, with the path and message it gives.

use super::*;

#[test]
fn read_errors_name_path_and_line() {
    let n = |extra: &str| format!("nodes:\n{}", node("n1", "https://10.0.0.1", extra));
    let cred = |line: &str| {
        format!(
            "nodes:\n- hostname: n1\n  bmc:\n    endpoint: https://10.0.0.1\n    credentials:\n      username: admin\n      {line}\n"
        )
    };
    // serde_yaml gives a refused value the line where its mapping starts.
    let cases: Vec<(String, usize, &str, &str)> = vec![
        (format!("sites: x\n{}", two_nodes()), 7, "sites", "unknown field `sites`"),
        ("nodes: []\nsite2: a\n".into(), 8, "site2", "unknown field `site2`"),
        (format!("nodeDefaults:\n  hostname: a\n{}", two_nodes()), 8, "nodeDefaults.hostname", "unknown field `hostname`"),
        (n("  bmcc: {}\n"), 14, "nodes[0].bmcc", "unknown field `bmcc`"),
        (n("  interfaces:\n  - mac: 52:54:00:zz:00:01\n"), 15, "nodes[0].interfaces[0].mac", "invalid MAC"),
        (n("  disk: {select: biggest}\n"), 14, "nodes[0].disk.select", "unknown variant"),
        ("nodes:\n- hostname: n1\n".into(), 8, "nodes[0]", "missing field `bmc`"),
        (cred("passwordFile: bmc.pw"), 12, "nodes[0].bmc.credentials.passwordFile", "a relative path: write it from the root"),
        (cred("passwordEnv: \"my pass\""), 12, "nodes[0].bmc.credentials.passwordEnv", "invalid environment variable name"),
        (cred("passwordEnv: 12345"), 12, "nodes[0].bmc.credentials.passwordEnv", "invalid environment variable name"),
        ("nodes:\n- hostname: n1\n  bmc:\n    endpoint: ftp://10.0.0.1\n".into(), 10, "nodes[0].bmc.endpoint", "not ftp://"),
        ("nodes:\n- hostname: n1\n  bmc:\n    endpoint: \"https://[::1\"\n".into(), 10, "nodes[0].bmc.endpoint", "invalid BMC endpoint"),
        ("nodes:\n- hostname: n1\n  bmc:\n    endpoint: https://10.0.0.1\n    tls: {pin: sha256:abc}\n".into(), 11, "nodes[0].bmc.tls.pin", "dcn bmc fingerprint"),
        ("nodes:\n- hostname: n1\n  bmc:\n    endpoint: https://10.0.0.1\n    tls: {pinn: x}\n".into(), 11, "nodes[0].bmc.tls.pinn", "unknown field `pinn`"),
        ("nodes:\n- hostname: N_1\n".into(), 8, "nodes[0].hostname", "invalid hostname"),
        ("nodes:\n- hostname: localhost\n".into(), 8, "nodes[0].hostname", "is reserved"),
        (format!("nodes:\n- hostname: {}.{}\n", "a".repeat(40), "b".repeat(40)), 8, "nodes[0].hostname", "at most 64 characters"),
        (format!("bundle:\n  ttl: 400d\n{}", two_nodes()), 8, "bundle.ttl", "outside the allowed range for a bundle's lifetime, 1s to 365d"),
        (format!("bundle:\n  maxUses: 3\n{}", two_nodes()), 8, "bundle.maxUses", "unknown field `maxUses`"),
    ];
    let mut wrong = Vec::new();
    for (body, line, path, msg) in &cases {
        let e = err_of(body);
        if e.line != Some(*line) || e.path != *path || !e.message.contains(msg) {
            wrong.push(format!("{line} {path} {msg}\n  got {e}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    // The header, the site, the image and media.
    let cases: &[(&str, &str, &str)] = &[
        (
            "apiVersion: dcn/v1alpha1\nkind: NodeConfig\n",
            "kind",
            "expects kind SiteInventory",
        ),
        (
            "apiVersion: dcn/v1alpha1\nkind: SiteInventory\nsite: Edge_1\n",
            "site",
            "invalid site name",
        ),
        (
            "apiVersion: dcn/v1alpha1\nkind: SiteInventory\nsite: e\nimage: dcn-edge.iso\n",
            "image",
            "relative path",
        ),
        (
            "apiVersion: dcn/v1alpha1\nkind: SiteInventory\nsite: e\nimage: /i.iso\nmedia: {listen: 10.0.0.1}\n",
            "media.listen",
            "invalid socket address",
        ),
        (
            "apiVersion: dcn/v1alpha1\nkind: SiteInventory\nsite: e\nimage: /i.iso\nmedia: {listen: 10.0.0.1:1, url: \"https://h/?a=b\"}\n",
            "media.url",
            "no ?query",
        ),
        (
            "apiVersion: dcn/v1alpha1\nkind: SiteInventory\nsite: e\nimage: /i.iso\nmedia: {listen: 10.0.0.1:1, url: \"ftp://h/\"}\n",
            "media.url",
            "write https://HOST",
        ),
        (
            "apiVersion: dcn/v1alpha1\nkind: SiteInventory\nsite: e\nimage: /i.iso\nmedia: {listen: 10.0.0.1:1}\n",
            "",
            "missing field `nodes`",
        ),
    ];
    for (text, path, msg) in cases {
        let e = parse_inventory(text, "site.yaml").unwrap_err();
        assert!(e.path.starts_with(path), "{text}: {e}");
        assert!(e.message.contains(msg), "{text}: {e}");
    }
}

#[test]
fn a_password_written_inline_is_refused_and_not_repeated() {
    for (at, body) in [
        (
            "nodes[0].bmc.credentials.password",
            "nodes:\n- hostname: n1\n  bmc:\n    endpoint: https://10.0.0.1\n    credentials:\n      username: admin\n      password: hunter2-secret\n",
        ),
        (
            "nodes[0].bmc.password",
            "nodes:\n- hostname: n1\n  bmc:\n    endpoint: https://10.0.0.1\n    password: hunter2-secret\n",
        ),
    ] {
        let e = err_of(body);
        assert_eq!(e.path, at, "{e}");
        assert!(e.line.is_some(), "{e}");
        let shown = e.to_string();
        assert!(
            e.message
                .starts_with("a password is never written in the inventory")
                && shown.contains("`passwordFile`")
                && shown.contains("`passwordEnv`"),
            "{shown}"
        );
        assert!(!shown.contains("hunter2"), "{shown}");
    }
    // Nor in a URL, nor in fields a password might land in by mistake.
    for body in [
        "nodes:\n- hostname: n1\n  bmc:\n    endpoint: https://admin:hunter2-secret@10.0.0.1\n",
        "nodes:\n- hostname: n1\n  bmc:\n    endpoint: https://10.0.0.1\n    credentials:\n      username: admin\n      passwordFile: hunter2-secret\n",
        "nodes:\n- hostname: n1\n  bmc:\n    endpoint: https://10.0.0.1\n    credentials:\n      username: admin\n      passwordEnv: hunter2-secret!\n",
        "nodes:\n- hostname: n1\n  bmc:\n    endpoint: https://10.0.0.1\n    credentials:\n      username: \"admin:hunter2-secret\"\n",
        "nodes:\n- hostname: n1\n  bmc:\n    endpoint: https://10.0.0.1\n    credentials:\n      username: admin\n      passwordFile: [hunter2-secret]\n",
    ] {
        let e = err_of(body).to_string();
        assert!(!e.contains("hunter2"), "{e}");
        assert!(e.contains("nodes[0].bmc."), "{e}");
    }
    let e = err_of(
        "nodes:\n- hostname: n1\n  bmc:\n    endpoint: https://admin:hunter2-secret@10.0.0.1\n",
    );
    assert!(e.message.contains("carries no credentials"), "{e}");
}

#[test]
fn cross_checks_name_the_field_to_fix() {
    let pair = |a: &str, b: &str| format!("nodes:\n{a}{b}");
    let n1 = |extra: &str| node("n1", "https://10.0.0.1", extra);
    let n2 = |extra: &str| node("n2", "https://10.0.0.2", extra);
    let eth = |addr: &str, more: &str| {
        format!("  interfaces:\n  - name: eth0\n    addresses: [{addr}]\n{more}")
    };
    let cases: Vec<(String, &str, &str)> = vec![
        ("nodes: []\n".into(), "nodes", "no nodes"),
        (pair(&n1(""), &node("n1", "https://10.0.0.2", "")), "nodes[1].hostname", "also the host name of nodes[0]"),
        (pair(&n1(""), &node("n2", "https://10.0.0.1:443/redfish/v1", "")), "nodes[1].bmc", "same BMC and system as nodes[0] (n1)"),
        (
            "nodes:\n- hostname: n1\n  bmc:\n    endpoint: https://10.0.0.1\n    tls: {insecure: true, pin: sha256:0000000000000000000000000000000000000000000000000000000000000000}\n    credentials: {username: a, passwordEnv: P}\n".into(),
            "nodes[0].bmc.tls",
            "not several",
        ),
        ("nodes:\n- hostname: n1\n  bmc:\n    endpoint: http://10.0.0.1\n    credentials: {username: a, passwordEnv: P}\n".into(), "nodes[0].bmc.endpoint", "tls.insecure: true"),
        ("nodes:\n- hostname: n1\n  bmc:\n    endpoint: https://10.0.0.1\n    credentials: {username: a, passwordEnv: P, passwordFile: /p}\n".into(), "nodes[0].bmc.credentials", "not both"),
        ("nodes:\n- hostname: n1\n  bmc:\n    endpoint: https://10.0.0.1\n    credentials: {username: a}\n".into(), "nodes[0].bmc.credentials", "passwordEnv: NAME"),
        (pair(&n1(""), &n2(&eth("10.1.0.5/24", "    gateway: 10.9.0.1\n"))), "nodes[1].interfaces[0].gateway", "not in the subnet"),
        (pair(&n1("  disk: {device: /dev/sda, select: largest}\n"), &n2("")), "nodes[0].disk", "not both"),
        (
            format!("nodeDefaults:\n  join: {{myIp: 10.1.0.9}}\n{}", pair(&n1(&eth("10.1.0.5/24", "")), &n2(""))),
            "nodeDefaults.join.myIp",
            "not one of the static addresses under `interfaces` (for nodes[0], n1)",
        ),
        (
            format!("nodeDefaults:\n{}{}", eth("10.1.0.5/24", ""), two_nodes()),
            "nodeDefaults.interfaces[0].addresses[0]",
            "10.1.0.5 would belong to nodes[0] (n1) and nodes[1] (n2); give each node its own `interfaces`",
        ),
        (
            pair(&n1(&eth("10.1.0.5/24", "")), &n2(&eth("10.1.0.5/16", ""))),
            "nodes[1].interfaces[0].addresses[0]",
            "10.1.0.5 would belong to nodes[0] (n1) and nodes[1] (n2)",
        ),
        (
            pair(
                &n1("  interfaces:\n  - mac: 52:54:00:00:00:01\n"),
                &n2("  interfaces:\n  - mac: 52-54-00-00-00-01\n"),
            ),
            "nodes[1].interfaces[0].mac",
            "MAC 52:54:00:00:00:01 would belong to nodes[0] (n1) and nodes[1] (n2)",
        ),
    ];
    for (body, path, msg) in &cases {
        let e = err_of(body);
        assert_eq!(e.path, *path, "{body}: {e}");
        assert!(e.message.contains(msg), "{body}: {e}");
        assert!(e.to_string().starts_with("site.yaml: "), "{e}");
    }
    // One BMC with several systems: told apart by `system`.
    let sys = |s: &str| {
        format!(
            "  bmc:\n    endpoint: https://10.0.0.1\n    system: {s}\n    credentials: {{username: a, passwordEnv: P}}\n"
        )
    };
    let body = format!(
        "nodes:\n- hostname: n1\n{}- hostname: n2\n{}",
        sys("1"),
        sys("2")
    );
    assert!(parse(&body).is_ok());
    // An http:// BMC is accepted with insecure, as by `dcn bmc`.
    let body = "nodes:\n- hostname: n1\n  bmc:\n    endpoint: http://10.0.0.1\n    tls: {insecure: true}\n    credentials: {username: a, passwordEnv: P}\n";
    assert!(parse(body).is_ok());
}

#[test]
fn media_checks() {
    let text = |media: &str| {
        format!(
            "apiVersion: dcn/v1alpha1\nkind: SiteInventory\nsite: e\nimage: /i.iso\nmedia: {media}\n{}",
            two_nodes()
        )
    };
    for (media, msg) in [
        ("{listen: 0.0.0.0:8443}", "which no BMC can fetch from"),
        ("{listen: \"[::]:8443\"}", "which no BMC can fetch from"),
        ("{listen: 10.0.0.1:0}", "port 0"),
        (
            "{listen: 10.0.0.1:1, url: http://h/}",
            "unless insecureHttp: true",
        ),
        (
            "{listen: 10.0.0.1:1, url: https://h/, insecureHttp: true}",
            "serves plain HTTP",
        ),
        (
            "{listen: 10.0.0.1:1, url: \"https://u:p@h/\"}",
            "no credentials",
        ),
    ] {
        let e = parse_inventory(&text(media), "site.yaml").unwrap_err();
        assert!(e.path.starts_with("media."), "{media}: {e}");
        assert!(e.message.contains(msg), "{media}: {e}");
    }
    let ok = parse_inventory(
        &text("{listen: 0.0.0.0:8443, url: http://10.0.0.2:80/, insecureHttp: true}"),
        "x",
    )
    .unwrap();
    assert_eq!(ok.media.url().as_str(), "http://10.0.0.2/");
}

#[test]
fn endpoints_are_accepted_exactly_as_dcn_bmc_accepts_them() {
    for given in [
        "10.0.0.5",
        "https://bmc.example:8443/redfish/v1",
        "https://[fd00::5]",
        "http://10.0.0.5",
        "ftp://10.0.0.5",
        "https://root:calvin@10.0.0.5",
        "https://",
        "https://[fd00::5",
        "https://10.0.0.5:99999",
        "mailto:a@b",
    ] {
        let ours = given.parse::<BmcEndpoint>();
        let theirs = crate::bmc::client::base_url(given);
        assert_eq!(
            ours.is_ok(),
            theirs.is_ok(),
            "{given}: {ours:?} / {theirs:?}"
        );
        if let (Ok(a), Ok(b)) = (ours, theirs) {
            assert_eq!(a.as_str(), b.as_str());
        }
    }
}
