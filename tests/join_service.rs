//! The join service over real HTTPS on loopback, with a control plane's
//! state in a temporary root: health, a join (CSR signed, credentials
//! returned, token use counted, node recorded), each refusal with its
//! reason, and the rate limit. RabbitMQ and keystone are not here: node
//! accounts are recorded by [`Accounts`] (the lab makes them for real).

use dcn::bundle::JoinToken;
use dcn::host::{FileSpec, Files, Host};
use dcn::join::client::{JoinClient, Refused};
use dcn::join::protocol::JoinRequest;
use dcn::pki::CertificateAuthority;
use dcn::secrets::{PasswordStore, Secret};
use dcn::sites::accounts::{NodeAccounts, NodeCredentials};
use dcn::sites::{Registry, Site, TokenRecord};
use dcn::timefmt::rfc3339;
use std::net::{SocketAddr, TcpListener};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

struct ControlPlane {
    _dir: tempfile::TempDir,
    files: Files,
    ca: CertificateAuthority,
    endpoint: String,
    accounts: Arc<Accounts>,
}

/// Node accounts as the join service asks for them: each grant gives new
/// passwords, numbered so a test can tell them apart.
#[derive(Default)]
struct Accounts {
    grants: Mutex<Vec<String>>,
}

impl NodeAccounts for Accounts {
    fn grant(&self, hostname: &str) -> anyhow::Result<NodeCredentials> {
        let mut g = self.grants.lock().unwrap();
        g.push(hostname.to_string());
        let n = g.len();
        Ok(NodeCredentials {
            username: dcn::sites::accounts::node_user(hostname),
            rabbit_password: Secret::new(format!("rabbit-{hostname}-{n}")),
            keystone_password: Secret::new(format!("keystone-{hostname}-{n}")),
        })
    }

    fn revoke(&self, _hostname: &str) -> anyhow::Result<()> {
        unreachable!("the join service never revokes")
    }
}

fn token(reg: &Registry, site: &str, ttl: i64, max_uses: u32) -> JoinToken {
    let t = JoinToken::generate();
    let now = SystemTime::now();
    let not_after = if ttl >= 0 {
        now + Duration::from_secs(ttl as u64)
    } else {
        now - Duration::from_secs((-ttl) as u64)
    };
    reg.save_token(&TokenRecord {
        id: t.id.clone(),
        hash: t.hash(),
        site: site.into(),
        created_at: rfc3339(now),
        not_after: rfc3339(not_after),
        max_uses,
        uses: 0,
    })
    .unwrap();
    t
}

fn control_plane() -> ControlPlane {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    let files = Files::new(&root, false);
    let ca = CertificateAuthority::generate("test CA").unwrap();
    files
        .ensure_dir("/var/lib/dcn", &FileSpec::private_dir())
        .unwrap();
    files
        .write(
            "/var/lib/dcn/pki/ca.crt",
            ca.cert_pem().as_bytes(),
            &FileSpec::secret(),
        )
        .unwrap();
    files
        .write(
            "/var/lib/dcn/pki/ca.key",
            ca.key_pem().expose().as_bytes(),
            &FileSpec::secret(),
        )
        .unwrap();
    let join = ca
        .issue(&dcn::pki::LeafRequest {
            common_name: "join".into(),
            dns_names: vec!["localhost".into()],
            ip_addresses: vec!["127.0.0.1".parse().unwrap()],
            usage: dcn::pki::Usage::Server,
        })
        .unwrap();
    files
        .write(
            "/var/lib/dcn/pki/join.crt",
            join.cert_pem.as_bytes(),
            &FileSpec::secret(),
        )
        .unwrap();
    files
        .write(
            "/var/lib/dcn/pki/join.key",
            join.key_pem.expose().as_bytes(),
            &FileSpec::secret(),
        )
        .unwrap();
    let mut pw = PasswordStore::default();
    pw.ensure(["metadata_secret", "keystone_admin"]);
    pw.save(&files).unwrap();
    files
        .write(
            "/var/lib/dcn/config.yaml",
            b"apiVersion: dcn/v1alpha1\nkind: StandaloneConfig\ncontrolPlane:\n  hostname: cp\n  address: 127.0.0.1\n",
            &FileSpec::secret(),
        )
        .unwrap();
    let reg = Registry::new(&files);
    for (name, revoked) in [("edge1", false), ("edge2", false), ("gone", true)] {
        reg.save_site(&Site {
            name: name.into(),
            created_at: rfc3339(SystemTime::now() - Duration::from_secs(60)),
            aggregate_id: Some(1),
            revoked_at: revoked.then(|| rfc3339(SystemTime::now())),
        })
        .unwrap();
    }
    // A free port, then the service on it (it runs until the test exits).
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let listen: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let host = Host::system(&root, false);
    let accounts = Arc::new(Accounts::default());
    let served: Arc<dyn NodeAccounts> = accounts.clone();
    std::thread::spawn(move || dcn::serve::serve_with(host, listen, served));
    for _ in 0..100 {
        if std::net::TcpStream::connect(listen).is_ok() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    ControlPlane {
        _dir: dir,
        files,
        ca,
        endpoint: format!("https://127.0.0.1:{port}"),
        accounts,
    }
}

fn request(token: &JoinToken, hostname: &str) -> JoinRequest {
    let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
    request_with_key(token, hostname, &key)
}

fn request_with_key(token: &JoinToken, hostname: &str, key: &rcgen::KeyPair) -> JoinRequest {
    let csr = rcgen::CertificateParams::new(vec![hostname.to_string()])
        .unwrap()
        .serialize_request(key)
        .unwrap()
        .pem()
        .unwrap();
    JoinRequest {
        token: token.expose_full(),
        hostname: hostname.into(),
        address: "10.240.1.10".into(),
        csr,
        dcn_version: "test".into(),
    }
}

fn refusal(client: &JoinClient, req: &JoinRequest) -> String {
    let err = client.join(req).unwrap_err();
    let r = err
        .downcast_ref::<Refused>()
        .unwrap_or_else(|| panic!("not a refusal: {err:#}"));
    format!("{} {}", r.0.error, r.0.message)
}

#[test]
fn joins_and_refusals_over_https() {
    let cp = control_plane();
    let client = JoinClient::new(&cp.endpoint, cp.ca.cert_pem()).unwrap();
    let health = client.health().unwrap();
    dcn::timefmt::parse_rfc3339(&health.time).unwrap();

    let reg = Registry::new(&cp.files);
    let good = token(&reg, "edge1", 3600, 1);
    let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
    let reply = client
        .join(&request_with_key(&good, "node1", &key))
        .unwrap();
    assert_eq!(reply.site, "edge1");
    // Accounts of the node's own, not of its site.
    assert_eq!(reply.messaging.username, "dcn-node-node1");
    assert_eq!(reply.messaging.password, "rabbit-node1-1");
    assert_eq!(reply.service_user.password, "keystone-node1-1");
    // Its certificate comes from a CA of its own, which the OVN SB trusts
    // (and the dcn CA did not sign: the SB does not trust that one).
    let record = reg.node("node1").unwrap().unwrap();
    let node_ca = record.ovn_ca.clone().unwrap();
    dcn::pki::verify_issued_by(&node_ca, &reply.node_certificate).unwrap();
    assert!(dcn::pki::verify_issued_by(cp.ca.cert_pem(), &reply.node_certificate).is_err());
    let admitted = cp
        .files
        .read_string(dcn::sites::ovn_access::CLIENT_CAS)
        .unwrap()
        .unwrap();
    assert!(admitted.contains(node_ca.trim()));
    assert!(!admitted.contains(cp.ca.cert_pem().trim()));
    let info = dcn::pki::CertInfo::from_pem(&reply.node_certificate).unwrap();
    assert!(info.subject.contains("node1"));
    assert_eq!(reg.token(&good.id).unwrap().unwrap().uses, 1);
    // The same host joining again with its key (a resumed join) is not a
    // new use; it gets new passwords.
    let again = client
        .join(&request_with_key(&good, "node1", &key))
        .unwrap();
    assert_eq!(again.messaging.password, "rabbit-node1-2");
    assert_eq!(reg.token(&good.id).unwrap().unwrap().uses, 1);
    let before = reg.node("node1").unwrap();
    // Anyone else naming node1 gets nothing, even with the site's token:
    // an old bundle does not reach a joined host's credentials.
    let r = refusal(&client, &request(&good, "node1"));
    assert!(
        r.starts_with("node-exists") && r.contains("dcn node remove node1"),
        "{r}"
    );
    let fresh = token(&reg, "edge1", 3600, 5);
    assert!(refusal(&client, &request(&fresh, "node1")).starts_with("node-exists"));
    assert_eq!(reg.token(&fresh.id).unwrap().unwrap().uses, 0);
    assert_eq!(
        reg.node("node1").unwrap(),
        before,
        "the refused requests changed nothing"
    );
    assert_eq!(cp.accounts.grants.lock().unwrap().len(), 2);

    // Each refusal names its reason.
    assert!(refusal(&client, &request(&good, "node2")).starts_with("token-used-up"));
    let expired = token(&reg, "edge1", -60, 5);
    assert!(refusal(&client, &request(&expired, "node3")).starts_with("token-expired"));
    assert!(
        refusal(&client, &request(&JoinToken::generate(), "node3")).starts_with("token-unknown")
    );
    let revoked = token(&reg, "gone", 3600, 5);
    assert!(refusal(&client, &request(&revoked, "node3")).starts_with("site-revoked"));
    let other_site = token(&reg, "edge2", 3600, 5);
    let r = refusal(&client, &request(&other_site, "node1"));
    assert!(
        r.starts_with("node-in-other-site") && r.contains("dcn node remove node1"),
        "{r}"
    );
    let mut bad = request(&other_site, "node4");
    bad.csr = "not a csr".into();
    assert!(refusal(&client, &bad).starts_with("bad-request"));
    // The node secret authenticates status requests; a wrong one is refused.
    let err = client.node_status("node1", "wrong").unwrap_err();
    assert!(err.downcast_ref::<Refused>().is_some(), "{err:#}");
}

#[test]
fn the_service_only_talks_tls_with_its_ca_and_rate_limits() {
    let cp = control_plane();
    let other = CertificateAuthority::generate("another CA").unwrap();
    let stranger = JoinClient::new(&cp.endpoint, other.cert_pem()).unwrap();
    assert!(
        stranger.health().is_err(),
        "a client trusting another CA refuses the service"
    );
    let client = JoinClient::new(&cp.endpoint, cp.ca.cert_pem()).unwrap();
    let mut limited = false;
    for _ in 0..40 {
        if let Err(e) = client.health()
            && let Some(r) = e.downcast_ref::<Refused>()
        {
            assert_eq!(r.0.error, "rate-limited");
            limited = true;
            break;
        }
    }
    assert!(limited, "40 quick requests from one address hit the limit");
}
