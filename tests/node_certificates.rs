//! Certificates over the join service, end to end on loopback: a node
//! joins, then its own `dcn` (the code its sync timer runs, on a node's
//! state in a temporary root) checks and renews its certificate with the
//! key it joined with; the centre records what it issued, and the OVN
//! southbound's list admits the new certificate's CA beside the old one.
//! Hostile checks change nothing. Then a CA rotation: nodes learn the new
//! CA at their next check, `--finish` refuses while one has not, the
//! control plane's certificates move to the new CA (the running join
//! service presents its renewed certificate without a restart), and a
//! node that missed it all gets back with `dcn node trust-ca` and the pin.

#[path = "support/join_server.rs"]
mod join_server;

use dcn::centre::sites::Registry;
use dcn::certs::authority::Authorities;
use dcn::edge::join::client::{JoinClient, Refused};
use dcn::host::{FileSpec, Files, Host, RecordingRunner};
use dcn::pki::split_pem;
use dcn::pki::{CertInfo, Pin};
use dcn::wire::CertificateCheck;
use join_server::ControlPlane;
use std::sync::Arc;

const PASSWD: &str = "root:x:0:0::/root:/bin/sh\nrabbitmq:x:120:120::/:/bin/false\n";
const GROUP: &str = "root:x:0:\nrabbitmq:x:120:\n";

/// A joined node's state, as `dcn join` leaves it, in its own root.
struct Node {
    _dir: tempfile::TempDir,
    host: Host,
    secret: String,
}

impl Node {
    fn join(cp: &ControlPlane, name: &str) -> Node {
        let client = JoinClient::new(&cp.endpoint, cp.ca.cert_pem()).unwrap();
        let key = join_server::node_key();
        let reply = client
            .join(&join_server::join_request(
                &cp.token.expose_full(),
                name,
                &key,
            ))
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let files = Files::new(dir.path(), false);
        let put = |p: &str, t: &str| files.write(p, t.as_bytes(), &FileSpec::secret()).unwrap();
        put("/etc/passwd", PASSWD);
        put("/etc/group", GROUP);
        let recipes = dcn::recipes::Recipes::embedded().unwrap();
        let services: Vec<String> = recipes
            .services_for_roles(&["edge"])
            .unwrap()
            .iter()
            .map(|s| format!("{:?}", s.service))
            .collect();
        put(
            dcn::deployment::DEPLOYMENT_FILE,
            &format!(
                r#"{{"roles":["edge"],"services":[{}],"hostname":"{name}","address":"10.240.1.10","site":"edge1"}}"#,
                services.join(",")
            ),
        );
        let mut creds = format!(
            "site: edge1\nnodeSecret: {}\ncredentials:\n",
            reply.node_secret
        );
        for (k, c) in &reply.credentials {
            creds.push_str(&format!("  {k}:\n"));
            if let Some(u) = &c.username {
                creds.push_str(&format!("    username: {u}\n"));
            }
            creds.push_str(&format!("    password: {}\n", c.password.expose()));
        }
        put("/var/lib/dcn/node/credentials.yaml", &creds);
        put("/var/lib/dcn/node/node.key", &key.serialize_pem());
        put("/var/lib/dcn/node/node.crt", &reply.node_certificate);
        put("/var/lib/dcn/node/join-endpoint", &cp.endpoint);
        files
            .write(
                "/etc/dcn/ca.crt",
                cp.ca.cert_pem().as_bytes(),
                &FileSpec::public(),
            )
            .unwrap();
        let host = Host::with_runner(dir.path(), Arc::new(RecordingRunner::default()), false);
        Node {
            _dir: dir,
            host,
            secret: reply.node_secret,
        }
    }

    fn cert(&self) -> CertInfo {
        CertInfo::from_pem(
            &self
                .host
                .files
                .read_string("/var/lib/dcn/node/node.crt")
                .unwrap()
                .unwrap(),
        )
        .unwrap()
    }

    fn trusted(&self) -> Vec<String> {
        split_pem(
            &self
                .host
                .files
                .read_string("/etc/dcn/ca.crt")
                .unwrap()
                .unwrap(),
        )
    }
}

/// The control plane's config with `certificates` settings.
fn set_certificates(cp: &ControlPlane, yaml: &str) {
    cp.files
        .write(
            "/var/lib/dcn/config.yaml",
            format!("apiVersion: dcn/v1alpha1\nkind: StandaloneConfig\ncontrolPlane:\n  hostname: cp\n  address: 127.0.0.1\ncertificates:\n{yaml}").as_bytes(),
            &FileSpec::secret(),
        )
        .unwrap();
}

fn node_record(cp: &ControlPlane, name: &str) -> dcn::centre::sites::NodeRecord {
    Registry::new(&cp.files).node(name).unwrap().unwrap()
}

/// How many node CAs the OVN southbound admits.
fn admitted(cp: &ControlPlane) -> usize {
    let text = cp
        .files
        .read_string(dcn::openstack::southbound::admission::CLIENT_CAS)
        .unwrap()
        .unwrap();
    split_pem(&text).len() - 1
}

fn refusal(e: anyhow::Error) -> String {
    match e.downcast_ref::<Refused>() {
        Some(r) => format!("{} {}", r.0.error, r.0.message),
        None => panic!("not a refusal: {e:#}"),
    }
}

#[test]
fn a_node_renews_with_its_own_key_and_hostile_checks_change_nothing() {
    let cp = ControlPlane::start(join_server::serve);
    let node = Node::join(&cp, "node1");
    let first = node.cert();
    let record = node_record(&cp, "node1");
    assert_eq!(
        CertInfo::from_pem(record.certificate.as_deref().unwrap())
            .unwrap()
            .serial,
        first.serial
    );
    assert_eq!(admitted(&cp), 1);

    // Not due: a check reports the CAs the node trusts, renews nothing.
    let done = dcn::edge::join::node_cert::check_now(
        &dcn::recipes::Recipes::embedded().unwrap(),
        &node.host,
        false,
    )
    .unwrap();
    assert_eq!(done.renewed, None);
    assert!(!done.trust_changed);
    let pin = Pin::of_cert_pem(cp.ca.cert_pem()).unwrap().to_string();
    assert_eq!(
        node_record(&cp, "node1").trusted_cas,
        std::slice::from_ref(&pin)
    );
    // Its certificate was installed where ovn-controller reads it.
    assert!(node.host.files.exists("/etc/ovn/dcn/node.pem").unwrap());

    // Short lifetimes, renewal at 90 % left: a forced renewal gets a
    // 3-minute certificate for the same key, from a CA of its own; the SB
    // admits both CAs (the open session's and the next one's).
    set_certificates(&cp, "  nodeLifetime: 3m\n  renewWhenLeft: 90%\n");
    let done = dcn::edge::join::node_cert::check_now(
        &dcn::recipes::Recipes::embedded().unwrap(),
        &node.host,
        true,
    )
    .unwrap();
    let second = node.cert();
    assert_eq!(done.renewed.as_ref().unwrap().0, second.serial);
    assert_eq!(second.spki_public_key, first.spki_public_key);
    assert_ne!(second.issuer, "");
    let life = second.not_after - second.not_before;
    assert_eq!(
        life.whole_seconds(),
        180 + 18,
        "3 minutes, backdated by a tenth"
    );
    assert_eq!(
        node.host
            .files
            .read_string("/etc/ovn/dcn/node.pem")
            .unwrap()
            .unwrap(),
        node.host
            .files
            .read_string("/var/lib/dcn/node/node.crt")
            .unwrap()
            .unwrap()
    );
    let record = node_record(&cp, "node1");
    assert_eq!(
        CertInfo::from_pem(record.certificate.as_deref().unwrap())
            .unwrap()
            .serial,
        second.serial
    );
    assert_eq!(record.previous_southbound_cas.len(), 1);
    assert_eq!(admitted(&cp), 2);

    // Two seconds on, less than 90 % of it is left: the timer's check
    // renews it by itself.
    std::thread::sleep(std::time::Duration::from_secs(3));
    let done = dcn::edge::join::node_cert::check_now(
        &dcn::recipes::Recipes::embedded().unwrap(),
        &node.host,
        false,
    )
    .unwrap();
    assert!(done.renewed.is_some(), "a due certificate was not renewed");
    assert_ne!(node.cert().serial, second.serial);

    // The control plane restored from a backup older than that renewal:
    // its record names an earlier certificate (whose CA the SB admits),
    // not the one the node holds. At its next check the node is told so
    // and renews at once, whatever its certificate's dates.
    let now_held = node.cert().serial;
    let restored = dcn::centre::sites::NodeRecord {
        certificate: record.certificate.clone(),
        southbound_ca: record.southbound_ca.clone(),
        ..node_record(&cp, "node1")
    };
    Registry::new(&cp.files).save_node(&restored).unwrap();
    set_certificates(&cp, "  nodeLifetime: 3m\n");
    let done = dcn::edge::join::node_cert::check_now(
        &dcn::recipes::Recipes::embedded().unwrap(),
        &node.host,
        false,
    )
    .unwrap();
    assert!(
        done.renewed.is_some(),
        "a node the centre has no record of renews"
    );
    assert_ne!(node.cert().serial, now_held);
    let record = node_record(&cp, "node1");
    assert_eq!(
        CertInfo::from_pem(record.certificate.as_deref().unwrap())
            .unwrap()
            .serial,
        node.cert().serial
    );

    // Hostile checks: wrong secret, another key, garbage, too many or
    // malformed pins. Nothing changes.
    let before = node_record(&cp, "node1");
    let client = JoinClient::new(&cp.endpoint, cp.ca.cert_pem()).unwrap();
    let other = join_server::node_key();
    let csr = rcgen::CertificateParams::new(vec!["node1".to_string()])
        .unwrap()
        .serialize_request(&other)
        .unwrap()
        .pem()
        .unwrap();
    let check = |pins: Vec<String>, csr: Option<String>| CertificateCheck {
        trusted_cas: pins,
        csr,
        holds: None,
    };
    let e = client
        .certificate("node1", "wrong-secret", &check(vec![pin.clone()], None))
        .unwrap_err();
    assert!(refusal(e).starts_with("token-unknown"));
    let e = client
        .certificate("node1", &node.secret, &check(vec![pin.clone()], Some(csr)))
        .unwrap_err();
    assert!(refusal(e).starts_with("key-changed"));
    let e = client
        .certificate("node1", &node.secret, &check(vec![pin.clone(); 9], None))
        .unwrap_err();
    assert!(refusal(e).contains("at most 8"));
    let e = client
        .certificate(
            "node1",
            &node.secret,
            &check(vec!["sha256:zz".into()], None),
        )
        .unwrap_err();
    assert!(refusal(e).contains("pin"));
    let e = client
        .certificate(
            "node1",
            &node.secret,
            &check(vec![], Some("not a CSR".into())),
        )
        .unwrap_err();
    assert!(refusal(e).contains("not usable"));
    let garbage = cp.raw_https(
        format!("POST /v1/nodes/node1/certificate HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\nContent-Length: 5\r\nConnection: close\r\n\r\n{{{{{{{{{{", node.secret).as_bytes(),
    );
    assert!(garbage.starts_with("HTTP/1.1 400"), "{garbage}");
    let huge = "x".repeat(9000);
    let big = cp.raw_https(
        format!("POST /v1/nodes/node1/certificate HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{huge}", node.secret, huge.len()).as_bytes(),
    );
    assert!(big.starts_with("HTTP/1.1 413"), "{big}");
    assert_eq!(node_record(&cp, "node1"), before);
}

#[test]
fn a_ca_rotation_reaches_every_node_and_one_left_behind_gets_back_with_the_pin() {
    let cp = ControlPlane::start(join_server::serve);
    // What `dcn ca rotate --finish` needs of a control plane: its record,
    // and users for the services' certificate copies.
    let files = &cp.files;
    let put = |p: &str, t: &str| files.write(p, t.as_bytes(), &FileSpec::secret()).unwrap();
    put("/etc/passwd", PASSWD);
    put("/etc/group", GROUP);
    put(
        dcn::deployment::DEPLOYMENT_FILE,
        r#"{"roles":["controller"],"services":["api-proxy","rabbitmq","ovn-central","join-service"],"hostname":"cp","address":"127.0.0.1"}"#,
    );
    let runner = Arc::new(RecordingRunner::default());
    let centre = Host::with_runner(cp.dir.path(), runner.clone(), false);
    let moving = Node::join(&cp, "node1");
    let behind = Node::join(&cp, "node2");
    let old_pin = Pin::of_cert_pem(cp.ca.cert_pem()).unwrap();

    let started =
        dcn::centre::renewal::rotation::start(&dcn::recipes::Recipes::embedded().unwrap(), &centre)
            .unwrap();
    assert!(started.created);
    let new_pin = started.pin.clone();
    // The control plane's services trust both at once.
    assert_eq!(
        split_pem(
            &files
                .read_string("/etc/rabbitmq/ssl/ca.pem")
                .unwrap()
                .unwrap()
        )
        .len(),
        2
    );
    // A second start carries on the same rotation.
    assert_eq!(
        dcn::centre::renewal::rotation::start(&dcn::recipes::Recipes::embedded().unwrap(), &centre)
            .unwrap()
            .pin,
        new_pin
    );

    // node1 checks: it trusts both, the new one first.
    let done = dcn::edge::join::node_cert::check_now(
        &dcn::recipes::Recipes::embedded().unwrap(),
        &moving.host,
        false,
    )
    .unwrap();
    assert!(done.trust_changed);
    let pins: Vec<String> = moving
        .trusted()
        .iter()
        .map(|c| Pin::of_cert_pem(c).unwrap().to_string())
        .collect();
    assert_eq!(pins, [new_pin.clone(), old_pin.to_string()]);
    let status = dcn::centre::renewal::rotation::status(&centre).unwrap();
    assert_eq!(
        (status.nodes_moved, status.nodes_not_moved),
        (vec!["node1".to_string()], vec!["node2".to_string()])
    );

    // node2 has not: --finish names it and changes nothing.
    let e = format!(
        "{:#}",
        dcn::centre::renewal::rotation::finish(
            &dcn::recipes::Recipes::embedded().unwrap(),
            &centre,
            false
        )
        .unwrap_err()
    );
    assert!(e.contains("node2") && e.contains("--force"), "{e}");
    assert_eq!(
        Authorities::new(files).rotation().unwrap(),
        dcn::certs::authority::Rotation::Overlap
    );

    // Forced: the control plane's certificates come from the new CA, the
    // old CA is retired (certificate kept, key gone).
    let finished = dcn::centre::renewal::rotation::finish(
        &dcn::recipes::Recipes::embedded().unwrap(),
        &centre,
        true,
    )
    .unwrap();
    assert_eq!(finished.pin, new_pin);
    assert_eq!(
        finished.retired.as_deref(),
        Some(old_pin.to_string().as_str())
    );
    assert_eq!(finished.left_behind, ["node2"]);
    let mut reissued = finished.reissued.clone();
    reissued.sort();
    assert_eq!(reissued, ["api", "join", "ovn-sb", "rabbitmq"]);
    let new_ca = Authorities::new(files).current().unwrap();
    let join_cert = files
        .read_string("/var/lib/dcn/pki/join.crt")
        .unwrap()
        .unwrap();
    dcn::pki::verify_issued_by(new_ca.cert_pem(), &join_cert).unwrap();
    assert_eq!(Authorities::new(files).trusted().unwrap().len(), 1);

    // The running join service presents its new certificate: node1 (which
    // trusts both) gets through and is told to trust the new CA alone.
    let done = dcn::edge::join::node_cert::check_now(
        &dcn::recipes::Recipes::embedded().unwrap(),
        &moving.host,
        false,
    )
    .unwrap();
    assert!(done.trust_changed);
    assert_eq!(moving.trusted().len(), 1);

    // node2 trusts only the retired CA: it cannot check the service now.
    let e = format!(
        "{:#}",
        dcn::edge::join::node_cert::check_now(
            &dcn::recipes::Recipes::embedded().unwrap(),
            &behind.host,
            false
        )
        .unwrap_err()
    );
    assert!(
        e.contains("UnknownIssuer") && e.contains("dcn node trust-ca --ca-pin"),
        "{e}"
    );
    // A wrong pin is refused, and changes nothing.
    let e = format!(
        "{:#}",
        dcn::edge::join::node_cert::trust_ca(
            &dcn::recipes::Recipes::embedded().unwrap(),
            &behind.host,
            &old_pin
        )
        .unwrap_err()
    );
    assert!(e.contains("dcn ca status"), "{e}");
    assert_eq!(behind.trusted().len(), 1);
    // The pin from `dcn ca status` brings it back.
    let done = dcn::edge::join::node_cert::trust_ca(
        &dcn::recipes::Recipes::embedded().unwrap(),
        &behind.host,
        &new_pin.parse().unwrap(),
    )
    .unwrap();
    assert!(done.trust_changed);
    assert_eq!(
        Pin::of_cert_pem(&behind.trusted()[0]).unwrap().to_string(),
        new_pin
    );
    assert!(
        dcn::edge::join::node_cert::check_now(
            &dcn::recipes::Recipes::embedded().unwrap(),
            &behind.host,
            false
        )
        .is_ok()
    );
    assert_eq!(node_record(&cp, "node2").trusted_cas, [new_pin]);
}
