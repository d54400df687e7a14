//! `dcn image serve` over HTTPS: an ISO with a node's payload holds a join
//! token, so `site deploy` serves it with the dcn CA's certificate. Checked
//! over real sockets: a client that trusts the CA gets whole files and
//! ranges; one that trusts another CA, or speaks plain HTTP, gets nothing;
//! a client that never finishes the handshake is cut at the head deadline;
//! and the command refuses a key others may read, changing nothing.

use dcn::bmc::{ImageServer, ImageServerLimits};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const ISO: &[u8] = b"an ISO, as far as this test is concerned: 0123456789";

/// A CA and a certificate for 127.0.0.1 it signed: (ca pem, cert pem, key pem).
fn pki() -> (String, String, String) {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca.key_usages = vec![
        rcgen::KeyUsagePurpose::KeyCertSign,
        rcgen::KeyUsagePurpose::CrlSign,
    ];
    ca.distinguished_name
        .push(rcgen::DnType::CommonName, "test CA");
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::new(ca, ca_key);
    let key = rcgen::KeyPair::generate().unwrap();
    let leaf = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()])
        .unwrap()
        .signed_by(&key, &issuer)
        .unwrap();
    (ca_cert.pem(), leaf.pem(), key.serialize_pem())
}

fn start(dir: &Path, cert: &str, key: &str, limits: ImageServerLimits) -> SocketAddr {
    std::fs::write(dir.join("node1.iso"), ISO).unwrap();
    let config = dcn::tls::server_config(cert, key, "the test server").unwrap();
    let server = ImageServer::bind(dir, "127.0.0.1:0".parse().unwrap())
        .unwrap()
        .with_limits(limits)
        .with_tls(config);
    assert_eq!(server.scheme(), "https");
    let addr = server.local_addr().unwrap();
    std::thread::spawn(move || server.run());
    addr
}

fn client(ca: &str) -> reqwest::blocking::Client {
    dcn::tls::http_client(Some(ca), Duration::from_secs(10)).unwrap()
}

#[test]
fn files_and_ranges_over_https_for_clients_that_trust_the_ca() {
    let dir = tempfile::tempdir().unwrap();
    let (ca, cert, key) = pki();
    let addr = start(dir.path(), &cert, &key, ImageServerLimits::default());
    let url = format!("https://{addr}/node1.iso");
    let http = client(&ca);

    let whole = http.get(&url).send().unwrap();
    assert_eq!(whole.status(), 200);
    assert_eq!(whole.bytes().unwrap().as_ref(), ISO);
    let part = http.get(&url).header("Range", "bytes=3-5").send().unwrap();
    assert_eq!(part.status(), 206);
    assert_eq!(part.bytes().unwrap().as_ref(), &ISO[3..6]);
    let missing = http
        .get(format!("https://{addr}/other.iso"))
        .send()
        .unwrap();
    assert_eq!(missing.status(), 404);

    // Another CA's client refuses the server: nothing is sent to it.
    let (other_ca, _, _) = pki();
    let err = client(&other_ca).get(&url).send().unwrap_err();
    assert!(
        err.is_connect() || err.to_string().contains("certificate"),
        "{err:#}"
    );

    // Plain HTTP to the HTTPS port gets no file.
    let mut plain = TcpStream::connect(addr).unwrap();
    plain
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    plain
        .write_all(b"GET /node1.iso HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut got = Vec::new();
    let _ = plain.read_to_end(&mut got);
    assert!(
        !got.windows(ISO.len()).any(|w| w == ISO),
        "plain HTTP must not get the file: {}",
        String::from_utf8_lossy(&got)
    );
}

#[test]
fn a_client_that_never_finishes_the_handshake_is_cut_at_the_deadline() {
    let dir = tempfile::tempdir().unwrap();
    let (ca, cert, key) = pki();
    let limits = ImageServerLimits {
        head_timeout: Duration::from_secs(1),
        ..ImageServerLimits::default()
    };
    let addr = start(dir.path(), &cert, &key, limits);
    let started = Instant::now();
    let mut idle = TcpStream::connect(addr).unwrap();
    idle.set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    // One byte of a TLS record header, then nothing.
    idle.write_all(&[0x16]).unwrap();
    let mut buf = [0u8; 64];
    let n = idle.read(&mut buf).unwrap_or(0);
    assert_eq!(n, 0, "the server closes without answering");
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_secs(10),
        "cut after {took:?}"
    );
    // The server still serves others.
    let ok = client(&ca)
        .get(format!("https://{addr}/node1.iso"))
        .send()
        .unwrap();
    assert_eq!(ok.status(), 200);
}

#[test]
fn the_command_refuses_a_key_others_may_read() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let (_, cert, key) = pki();
    let serve = dir.path().join("serve");
    std::fs::create_dir(&serve).unwrap();
    let (cert_file, key_file) = (dir.path().join("c.pem"), dir.path().join("k.pem"));
    std::fs::write(&cert_file, cert).unwrap();
    std::fs::write(&key_file, key).unwrap();
    std::fs::set_permissions(&key_file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_dcn"))
        .args(["image", "serve"])
        .arg(&serve)
        .args(["--listen", "127.0.0.1:0", "--tls-cert"])
        .arg(&cert_file)
        .arg("--tls-key")
        .arg(&key_file)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("mode 644 lets other users at it")
            && stderr.contains(&format!("`chmod 600 {}`", key_file.display())),
        "{stderr}"
    );
    assert!(
        !stderr.contains("PRIVATE KEY"),
        "the key is never printed: {stderr}"
    );
    assert_eq!(std::fs::read_dir(&serve).unwrap().count(), 0);

    // Only one of the pair is a usage error.
    let out = Command::new(env!("CARGO_BIN_EXE_dcn"))
        .args(["image", "serve"])
        .arg(&serve)
        .arg("--tls-cert")
        .arg(&cert_file)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--tls-key"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
