//! A node's upgrade through the join service, over real HTTPS on loopback
//! with a control plane's state in a temporary root: its check kept and
//! answered with its order from the upgrade under way; an edge release's
//! files fetched in pieces by the node's own client, resumed and checked;
//! image files served only to the site that caches them; and what a
//! stranger, a wrong secret, a crafted path or range, or a node older
//! than the window gets.

#[path = "support/join_server.rs"]
mod join_server;

use dcn::centre::edge_release::StoredRelease;
use dcn::centre::sites::upgrade_campaign::{Campaign, waves};
use dcn::centre::sites::{Registry, upgrade_state};
use dcn::edge::join::client::JoinClient;
use dcn::edge::upgrade::fetch::{Source, Wanted, fetch};
use dcn::host::{FileSpec, Files};
use dcn::wire::*;
use join_server::{ControlPlane, token};
use sha2::{Digest, Sha256};

fn sha(data: &[u8]) -> String {
    hex::encode(Sha256::digest(data))
}

/// A node of edge1 joined through the service: its name and secret.
fn joined(cp: &ControlPlane, client: &JoinClient, hostname: &str, site: &str) -> String {
    let t = token(&Registry::new(&cp.files), site, 3600, 1);
    let key = join_server::node_key();
    let reply = client
        .join(&join_server::join_request(&t.expose_full(), hostname, &key))
        .unwrap();
    reply.node_secret
}

/// An edge release kept on the control plane: a binary, an index naming
/// one package, and that package of `package_size` bytes.
fn release(files: &Files, package_size: usize) -> (EdgeRelease, Vec<u8>) {
    let binary = b"#!/bin/sh\necho dcn 9.9.9\n".to_vec();
    let package: Vec<u8> = (0..package_size).map(|i| (i % 253) as u8).collect();
    let deb = "ovn-host_23.03.1-1+dcn1_amd64.deb";
    let index = dcn::host::apt::index::stanza(
        "Package: ovn-host\nVersion: 23.03.1-1+dcn1\nArchitecture: amd64\n",
        deb,
        package.len() as u64,
        &sha(&package),
    );
    let id = "9.9.9-0123456789abcdef";
    let r = EdgeRelease {
        id: id.into(),
        dcn_version: "9.9.9".into(),
        dcn: ReleaseFile {
            name: RELEASE_BINARY.into(),
            sha256: sha(&binary),
            size: binary.len() as u64,
        },
        index: ReleaseFile {
            name: RELEASE_INDEX.into(),
            sha256: sha(index.as_bytes()),
            size: index.len() as u64,
        },
    };
    let dir = format!("/var/lib/dcn/edge-release/releases/{id}");
    let public = FileSpec::public();
    files.write(format!("{dir}/dcn"), &binary, &public).unwrap();
    files
        .write(format!("{dir}/Packages"), index.as_bytes(), &public)
        .unwrap();
    let stored = StoredRelease {
        release: r.clone(),
        built_at: dcn::timefmt::rfc3339(std::time::SystemTime::now()),
        packages: 1,
        not_in_source: 0,
    };
    files
        .write(
            format!("{dir}/release.json"),
            serde_json::to_string(&stored).unwrap().as_bytes(),
            &public,
        )
        .unwrap();
    files
        .write(
            format!("/var/lib/dcn/edge-release/pool/{deb}"),
            &package,
            &public,
        )
        .unwrap();
    (r, package)
}

/// Pieces of a release through the node's own client.
struct Pieces<'a> {
    client: &'a JoinClient,
    hostname: &'a str,
    secret: &'a str,
    release: &'a str,
}

impl Source for Pieces<'_> {
    fn piece(&self, name: &str, offset: u64) -> anyhow::Result<(Vec<u8>, u64)> {
        self.client
            .release_piece(self.hostname, self.secret, self.release, name, offset)
    }
}

#[test]
fn a_node_is_told_its_order_and_fetches_its_release_in_pieces() {
    let cp = ControlPlane::start(join_server::serve);
    let client = JoinClient::new(&cp.endpoint, cp.ca.cert_pem()).unwrap();
    let secret = joined(&cp, &client, "n1", "edge1");
    let check = UpgradeCheck {
        dcn_version: "0.2.0".into(),
        image_cache: vec!["a".repeat(40), "not a cache name".into()],
        ..UpgradeCheck::default()
    };
    // No upgrade under way: nothing to do; the node's word is kept.
    let order = client
        .upgrade_check("n1", &secret, &check)
        .unwrap()
        .unwrap();
    assert_eq!(order.action, UpgradeAction::None);
    let kept = upgrade_state::load(&cp.files, "n1").unwrap().unwrap();
    assert_eq!(kept.check.dcn_version, "0.2.0");
    assert_eq!(
        kept.check.image_cache,
        ["a".repeat(40)],
        "only cache names are kept"
    );

    // An upgrade of edge1: the node stages, then applies on its turn.
    let (r, package) = release(&cp.files, 9 * 1024 * 1024 + 17);
    let mut campaign = Campaign {
        release: r.clone(),
        sites: vec!["edge1".into()],
        canary: None,
        batch: 1,
        max_failures: 1,
        started_at: dcn::timefmt::rfc3339(std::time::SystemTime::now()),
        nodes: waves(&[("n1".into(), "edge1".into())], None, 1).unwrap(),
    };
    campaign.save(&cp.files).unwrap();
    let order = client
        .upgrade_check("n1", &secret, &check)
        .unwrap()
        .unwrap();
    assert_eq!(order.action, UpgradeAction::Stage);
    assert_eq!(order.release.as_ref(), Some(&r));
    let n = campaign.node_mut("n1").unwrap();
    n.attempt = 1;
    n.ordered_at = Some("2026-12-06T00:00:00Z".into());
    campaign.save(&cp.files).unwrap();
    let order = client
        .upgrade_check("n1", &secret, &check)
        .unwrap()
        .unwrap();
    assert_eq!((order.action, order.attempt), (UpgradeAction::Apply, 1));

    // The package, larger than a piece, arrives whole and checked; a cut
    // download goes on from where it stopped.
    let node = tempfile::tempdir().unwrap();
    let node_files = Files::new(node.path(), false);
    let source = Pieces {
        client: &client,
        hostname: "n1",
        secret: &secret,
        release: &r.id,
    };
    let deb = "ovn-host_23.03.1-1+dcn1_amd64.deb";
    let (first, size) = source.piece(deb, 0).unwrap();
    assert_eq!(first.len() as u64, RELEASE_CHUNK, "one piece at most");
    assert_eq!(size, package.len() as u64);
    node_files
        .append(format!("/r/{deb}.part"), &first, &FileSpec::public())
        .unwrap();
    let wanted = Wanted {
        name: deb,
        size: package.len() as u64,
        sha256: &sha(&package),
    };
    assert!(
        fetch(
            &node_files,
            &source,
            &wanted,
            &format!("/r/{deb}"),
            &FileSpec::public()
        )
        .unwrap()
    );
    assert_eq!(
        node_files.read(format!("/r/{deb}")).unwrap().unwrap(),
        package
    );
    let wanted = Wanted {
        name: "dcn",
        size: r.dcn.size,
        sha256: &r.dcn.sha256,
    };
    fetch(&node_files, &source, &wanted, "/r/dcn", &FileSpec::public()).unwrap();
    let (index, _) = source.piece("Packages", 0).unwrap();
    let index =
        dcn::host::apt::index::PackageIndex::parse(std::str::from_utf8(&index).unwrap()).unwrap();
    assert!(index.find("ovn-host", "23.03.1-1+dcn1").is_some());
}

#[test]
fn strangers_wrong_secrets_crafted_paths_and_ranges_get_nothing() {
    let cp = ControlPlane::start(join_server::serve);
    let client = JoinClient::new(&cp.endpoint, cp.ca.cert_pem()).unwrap();
    let secret = joined(&cp, &client, "n1", "edge1");
    let (r, _) = release(&cp.files, 10);
    let check = UpgradeCheck {
        dcn_version: "0.2.0".into(),
        ..UpgradeCheck::default()
    };
    let e = format!(
        "{:#}",
        client.upgrade_check("n1", "wrong", &check).unwrap_err()
    );
    assert!(e.contains("token-unknown"), "{e}");
    let e = format!(
        "{:#}",
        client
            .release_piece("n1", "wrong", &r.id, "dcn", 0)
            .unwrap_err()
    );
    assert!(e.contains("token-unknown"), "{e}");
    // A release or file the control plane does not keep.
    for (id, file) in [("9.9.9-ffff", "dcn"), (r.id.as_str(), "other_1_all.deb")] {
        let e = format!(
            "{:#}",
            client
                .release_piece("n1", &secret, id, file, 0)
                .unwrap_err()
        );
        assert!(e.contains("file-unknown"), "{id} {file}: {e}");
    }
    let raw = |request: String| cp.raw_https(request.as_bytes());
    let get = |path: &str, extra: &str| {
        raw(format!(
            "GET {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {secret}\r\n{extra}Connection: close\r\n\r\n"
        ))
    };
    for path in [
        format!("/v1/nodes/n1/release/{}/../../pki/ca.key", r.id),
        format!("/v1/nodes/n1/release/{}/pool%2Fx.deb", r.id),
        "/v1/nodes/n1/release/../dcn".to_string(),
        "/v1/nodes/n1/image/../../pki/ca.key".to_string(),
    ] {
        let answer = get(&path, "");
        assert!(answer.starts_with("HTTP/1.1 404"), "{path}: {answer}");
    }
    let path = format!("/v1/nodes/n1/release/{}/dcn", r.id);
    for range in ["bytes=-5", "bytes=5-1", "bytes=0-1,3-4", "lines=1-"] {
        let answer = get(&path, &format!("Range: {range}\r\n"));
        assert!(answer.starts_with("HTTP/1.1 416"), "{range}: {answer}");
    }
    let answer = get(&path, "Range: bytes=1000-\r\n");
    assert!(answer.starts_with("HTTP/1.1 416"), "past the end: {answer}");
    let answer = get(&path, "Range: bytes=5-\r\n");
    assert!(
        answer.starts_with("HTTP/1.1 206") && answer.contains("content-range: bytes 5-"),
        "{answer}"
    );
    // A node older than the window is refused with the way out.
    let old = raw(format!(
        "POST /v1/nodes/n1/upgrade HTTP/1.1\r\nHost: x\r\nUser-Agent: dcn/0.0.9\r\nAuthorization: Bearer {secret}\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{{}}"
    ));
    assert!(
        old.starts_with("HTTP/1.1 426") && old.contains("node-too-old") && old.contains("dcn join"),
        "{old}"
    );
    // Garbage as a check is refused, and nothing is kept of it.
    let answer = raw(format!(
        "POST /v1/nodes/n1/upgrade HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {secret}\r\nContent-Length: 5\r\nConnection: close\r\n\r\n\x00\x01abc"
    ));
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
    assert!(upgrade_state::load(&cp.files, "n1").unwrap().is_none());
}

#[test]
fn image_files_go_to_the_nodes_of_the_site_that_caches_them() {
    let cp = ControlPlane::start(join_server::serve);
    let client = JoinClient::new(&cp.endpoint, cp.ca.cert_pem()).unwrap();
    let s1 = joined(&cp, &client, "n1", "edge1");
    let s2 = joined(&cp, &client, "n2", "edge2");
    let kernel = b"a kernel".to_vec();
    let id = "a1be349a-f5cc-4d7d-90b9-b105fdf37df7";
    let file = ImageFile {
        id: id.into(),
        sha256: sha(&kernel),
        size: kernel.len() as u64,
    };
    dcn::centre::sites::image_files::add(&cp.files, "edge1", file.clone()).unwrap();
    cp.files
        .write(
            dcn::centre::sites::image_files::path(id),
            &kernel,
            &FileSpec::secret(),
        )
        .unwrap();
    let check = UpgradeCheck {
        dcn_version: "0.2.0".into(),
        ..UpgradeCheck::default()
    };
    let order = client.upgrade_check("n1", &s1, &check).unwrap().unwrap();
    assert_eq!(order.image_files, [file]);
    assert_eq!(client.image_piece("n1", &s1, id, 0).unwrap(), (kernel, 8));
    let order = client.upgrade_check("n2", &s2, &check).unwrap().unwrap();
    assert!(order.image_files.is_empty());
    let e = format!("{:#}", client.image_piece("n2", &s2, id, 0).unwrap_err());
    assert!(e.contains("file-unknown"), "another site's node: {e}");
}
