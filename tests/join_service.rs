//! The join service over real HTTPS on loopback, with a control plane's
//! state in a temporary root: health, a join (CSR signed, credentials
//! returned, token use counted, node recorded), each refusal with its
//! reason, and the rate limit. OpenStack is not needed for these paths.

use dcn::bundle::JoinToken;
use dcn::host::{FileSpec, Files, Host};
use dcn::join::client::{JoinClient, Refused};
use dcn::join::protocol::JoinRequest;
use dcn::pki::CertificateAuthority;
use dcn::secrets::{PasswordStore, Secret};
use dcn::sites::{Registry, Site, SiteSecrets, TokenRecord};
use dcn::timefmt::rfc3339;
use std::net::{SocketAddr, TcpListener};
use std::time::{Duration, SystemTime};

struct ControlPlane {
    _dir: tempfile::TempDir,
    files: Files,
    ca: CertificateAuthority,
    endpoint: String,
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
        if !revoked {
            reg.save_site_secrets(
                name,
                &SiteSecrets {
                    rabbit_password: Secret::new(format!("rabbit-{name}-pw")),
                    keystone_password: Secret::new(format!("keystone-{name}-pw")),
                },
            )
            .unwrap();
        }
    }
    // A free port, then the service on it (it runs until the test exits).
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let listen: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let host = Host::system(&root, false);
    std::thread::spawn(move || dcn::serve::serve_on(host, listen));
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
    }
}

fn request(token: &JoinToken, hostname: &str) -> JoinRequest {
    let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
    let csr = rcgen::CertificateParams::new(vec![hostname.to_string()])
        .unwrap()
        .serialize_request(&key)
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
    let reply = client.join(&request(&good, "node1")).unwrap();
    assert_eq!(reply.site, "edge1");
    assert_eq!(reply.messaging.username, "dcn-site-edge1");
    assert_eq!(reply.messaging.password, "rabbit-edge1-pw");
    assert_eq!(reply.service_user.password, "keystone-edge1-pw");
    dcn::pki::verify_issued_by(cp.ca.cert_pem(), &reply.node_certificate).unwrap();
    let info = dcn::pki::CertInfo::from_pem(&reply.node_certificate).unwrap();
    assert!(info.subject.contains("node1"));
    assert_eq!(reg.token(&good.id).unwrap().unwrap().uses, 1);
    assert!(reg.node("node1").unwrap().is_some());
    // The same host joining again (a resumed join) is not a new use.
    client.join(&request(&good, "node1")).unwrap();
    assert_eq!(reg.token(&good.id).unwrap().unwrap().uses, 1);

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
