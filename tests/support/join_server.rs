//! A control plane's join service on 127.0.0.1 for the join-service
//! tests: its state (CA, join certificate, sites edge1 and edge2 and the
//! revoked site gone, a token) in a private temporary root, node accounts
//! recorded by [`Accounts`] (RabbitMQ and keystone are not here; the lab
//! makes them for real), the service started by the test's own
//! function in a thread, raw TLS and TCP clients (from any 127.0.0.0/8
//! address), and the service's log captured in memory.

#![allow(dead_code)]

use dcn::bundle::JoinToken;
use dcn::centre::sites::{Registry, Site, TokenRecord};
use dcn::host::{FileSpec, Files, Host};
use dcn::openstack::accounts::NodeAccounts;
use dcn::passwords::PasswordStore;
use dcn::pki::CertificateAuthority;
use dcn::recipes::site_credentials::NodeAccount;
use dcn::secrets::Secret;
use dcn::timefmt::rfc3339;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

pub struct ControlPlane {
    pub dir: tempfile::TempDir,
    pub files: Files,
    pub ca: CertificateAuthority,
    pub port: u16,
    pub endpoint: String,
    pub token: JoinToken,
    pub accounts: Arc<Accounts>,
}

/// Node accounts as the join service asks for them: every account it
/// makes or gives a new password, in order; and the cloud's compute hosts
/// (the control plane's own `cp`, and a `legacy1` dcn never joined).
pub struct Accounts {
    pub ensured: Mutex<Vec<(String, NodeAccount, Secret)>>,
    pub compute_hosts: Mutex<Vec<String>>,
}

impl Default for Accounts {
    fn default() -> Accounts {
        Accounts {
            ensured: Mutex::default(),
            compute_hosts: Mutex::new(vec!["cp".into(), "legacy1".into()]),
        }
    }
}

impl dcn::openstack::compute::ComputeHosts for Accounts {
    fn is_compute_host(&self, hostname: &str) -> anyhow::Result<bool> {
        Ok(self
            .compute_hosts
            .lock()
            .unwrap()
            .iter()
            .any(|h| h == hostname))
    }
}

impl Accounts {
    /// How many accounts were made or given new passwords.
    pub fn count(&self) -> usize {
        self.ensured.lock().unwrap().len()
    }

    /// The password `account` of `hostname` was given last.
    pub fn password(&self, hostname: &str, account: &NodeAccount) -> Option<Secret> {
        (self.ensured.lock().unwrap().iter().rev())
            .find(|(h, a, _)| h == hostname && a == account)
            .map(|(_, _, p)| p.clone())
    }
}

impl NodeAccounts for Accounts {
    fn make(&self, hostname: &str, account: &NodeAccount) -> anyhow::Result<Secret> {
        let password = dcn::secrets::generate_password();
        let entry = (hostname.to_string(), account.clone(), password.clone());
        self.ensured.lock().unwrap().push(entry);
        Ok(password)
    }

    fn delete(&self, _hostname: &str, _account: &NodeAccount) -> anyhow::Result<()> {
        unreachable!("the join service never deletes accounts")
    }
}

/// Record a token for `site` valid for `ttl` seconds (negative: expired).
pub fn token(reg: &Registry, site: &str, ttl: i64, max_uses: u32) -> JoinToken {
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

/// A join request for `hostname` with `token` (`<id>.<secret>`), whose CSR
/// is for `key`, without a proof of the key.
pub fn join_request(token: &str, hostname: &str, key: &rcgen::KeyPair) -> dcn::wire::JoinRequest {
    let csr = rcgen::CertificateParams::new(vec![hostname.to_string()])
        .unwrap()
        .serialize_request(key)
        .unwrap()
        .pem()
        .unwrap();
    dcn::wire::JoinRequest {
        token: token.into(),
        hostname: hostname.into(),
        address: "10.240.1.10".into(),
        csr,
        dcn_version: "test".into(),
        proof: None,
    }
}

/// A new node key, as `dcn join` makes it.
pub fn node_key() -> rcgen::KeyPair {
    rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap()
}

/// The catalogue, as `dcn serve` loads it.
pub fn recipes() -> dcn::recipes::Recipes {
    dcn::recipes::Recipes::embedded().expect("the recipes built into dcn load")
}

/// The join service with default limits.
pub fn serve(host: Host, listen: SocketAddr, accounts: Arc<dyn NodeAccounts>) {
    let _ = dcn::centre::serve::serve_with(
        host,
        recipes(),
        listen,
        dcn::centre::serve::Limits::default(),
        accounts,
    );
}

impl ControlPlane {
    /// A control plane whose service `start` runs (it never returns).
    pub fn start(
        start: impl FnOnce(Host, SocketAddr, Arc<dyn NodeAccounts>) + Send + 'static,
    ) -> ControlPlane {
        let dir = tempfile::tempdir().unwrap();
        let files = Files::new(dir.path(), false);
        let ca = CertificateAuthority::generate("test CA").unwrap();
        let secret = FileSpec::secret();
        files
            .ensure_dir("/var/lib/dcn", &FileSpec::private_dir())
            .unwrap();
        let put = |path: &str, text: &str| files.write(path, text.as_bytes(), &secret).unwrap();
        put("/var/lib/dcn/pki/ca.crt", ca.cert_pem());
        put("/var/lib/dcn/pki/ca.key", ca.key_pem().expose());
        let join = ca
            .issue(&dcn::pki::LeafRequest {
                common_name: "join".into(),
                dns_names: vec!["localhost".into()],
                ip_addresses: vec!["127.0.0.1".parse().unwrap()],
                usage: dcn::pki::Usage::Server,
            })
            .unwrap();
        put("/var/lib/dcn/pki/join.crt", &join.cert_pem);
        put("/var/lib/dcn/pki/join.key", join.key_pem.expose());
        put(
            "/var/lib/dcn/config.yaml",
            "apiVersion: dcn/v1alpha1\nkind: StandaloneConfig\ncontrolPlane:\n  hostname: cp\n  address: 127.0.0.1\n",
        );
        let mut pw = PasswordStore::default();
        pw.ensure(["metadata_secret", "keystone_admin"]);
        pw.save(&files).unwrap();
        let reg = Registry::new(&files);
        let now = SystemTime::now();
        for (name, revoked) in [("edge1", false), ("edge2", false), ("gone", true)] {
            reg.save_site(&Site {
                name: name.into(),
                created_at: rfc3339(now - Duration::from_secs(60)),
                aggregate_id: Some(1),
                revoked_at: revoked.then(|| rfc3339(now)),
            })
            .unwrap();
        }
        let token = JoinToken::generate();
        reg.save_token(&TokenRecord {
            id: token.id.clone(),
            hash: token.hash(),
            site: "edge1".into(),
            created_at: rfc3339(now),
            not_after: rfc3339(now + Duration::from_secs(3600)),
            max_uses: 5,
            uses: 0,
        })
        .unwrap();
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let listen: SocketAddr = ([127, 0, 0, 1], port).into();
        let host = Host::system(dir.path(), false);
        let accounts = Arc::new(Accounts::default());
        let served: Arc<dyn NodeAccounts> = accounts.clone();
        std::thread::spawn(move || start(host, listen, served));
        // The readiness probe comes from an address no test uses: the
        // service may hold its place a while after it is dropped, and it
        // must not count against a test's share from 127.0.0.1.
        for _ in 0..100 {
            if connect_from(PROBE_ADDRESS, port).is_ok() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        ControlPlane {
            dir,
            files,
            ca,
            port,
            endpoint: format!("https://127.0.0.1:{port}"),
            token,
            accounts,
        }
    }

    /// A TCP connection to the service from `from` (any 127.x.y.z).
    pub fn tcp_from(&self, from: Ipv4Addr) -> std::io::Result<TcpStream> {
        connect_from(from, self.port)
    }

    /// A TLS connection from `from`, trusting the test CA.
    pub fn tls_from(&self, from: Ipv4Addr) -> std::io::Result<Tls> {
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(rustls::pki_types::CertificateDer::from(
                dcn::pki::pem_der(self.ca.cert_pem()).unwrap(),
            ))
            .unwrap();
        let config = rustls::ClientConfig::builder_with_provider(dcn::tls::provider())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
        let conn = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
        let tcp = self.tcp_from(from)?;
        tcp.set_read_timeout(Some(Duration::from_secs(5)))?;
        let mut tls = rustls::StreamOwned::new(conn, tcp);
        while tls.conn.is_handshaking() {
            tls.conn.complete_io(&mut tls.sock)?;
        }
        Ok(tls)
    }

    /// Send raw bytes over TLS from 127.0.0.1; the answer, as text.
    pub fn raw_https(&self, request: &[u8]) -> String {
        let mut tls = self.tls_from(Ipv4Addr::LOCALHOST).unwrap();
        tls.write_all(request).unwrap();
        let mut out = Vec::new();
        let _ = tls.read_to_end(&mut out);
        String::from_utf8_lossy(&out).into_owned()
    }
}

pub type Tls = rustls::StreamOwned<rustls::ClientConnection, TcpStream>;

/// The log of everything in this test process, captured in memory (the
/// first MiB kept, every byte counted), as `dcn serve` would print it.
pub mod log {
    use std::sync::atomic::{AtomicU64, Ordering};

    static BYTES: AtomicU64 = AtomicU64::new(0);
    static KEPT: super::Mutex<Vec<u8>> = super::Mutex::new(Vec::new());

    struct Sink;

    impl std::io::Write for Sink {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            BYTES.fetch_add(buf.len() as u64, Ordering::Relaxed);
            let mut kept = KEPT.lock().unwrap();
            if kept.len() < 1 << 20 {
                kept.extend_from_slice(buf);
            }
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// Capture from now on (once per process).
    pub fn capture() {
        let _ = tracing_subscriber::fmt()
            .with_writer(|| Sink)
            .with_ansi(false)
            .without_time()
            .with_target(false)
            .with_level(false)
            .with_max_level(tracing::Level::INFO)
            .try_init();
    }

    pub fn bytes() -> u64 {
        BYTES.load(Ordering::Relaxed)
    }

    pub fn text() -> String {
        String::from_utf8_lossy(&KEPT.lock().unwrap()).into_owned()
    }
}

/// Where `ControlPlane::start` checks that the service listens from.
const PROBE_ADDRESS: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 254);

/// A TCP connection to 127.0.0.1:`port` from `from` (any 127.x.y.z).
fn connect_from(from: Ipv4Addr, port: u16) -> std::io::Result<TcpStream> {
    use nix::sys::socket::{AddressFamily, SockFlag, SockType, SockaddrIn, bind, connect, socket};
    use std::os::fd::AsRawFd;
    let fd = socket(
        AddressFamily::Inet,
        SockType::Stream,
        SockFlag::empty(),
        None,
    )?;
    bind(
        fd.as_raw_fd(),
        &SockaddrIn::from(SocketAddrV4::new(from, 0)),
    )?;
    let to = SockaddrIn::from(SocketAddrV4::new(Ipv4Addr::LOCALHOST, port));
    connect(fd.as_raw_fd(), &to)?;
    Ok(TcpStream::from(fd))
}
