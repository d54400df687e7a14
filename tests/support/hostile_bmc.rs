//! A hostile BMC on 127.0.0.1 for the tests of what dcn does with what a BMC
//! (or whatever answers in its place) sends: TLS with a pinned key and,
//! on the same port, plain HTTP (so a redirect to `http://` the same host
//! and port can be caught receiving the password). It serves one system
//! recorded from sushy-tools; a test overrides any answer, including with
//! bodies that never end, bodies that trickle in a byte at a time, and
//! silence. `run_dcn` runs the real binary and measures its
//! peak memory.

#![allow(dead_code)]

use serde_json::{Value, json};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub const USER: &str = "admin";
pub const PASSWORD: &str = "hostile-test-Pa55word";
pub const SYSTEM: &str = "/redfish/v1/Systems/27946b59-9e44-4fa7-8e91-f3527a1ef094";
pub const CD: &str = "/redfish/v1/Systems/27946b59-9e44-4fa7-8e91-f3527a1ef094/VirtualMedia/Cd";

/// The Basic-auth token dcn sends.
pub fn basic_token() -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(format!("{USER}:{PASSWORD}"))
}

fn fixture(name: &str) -> Value {
    let path = format!(
        "{}/tests/fixtures/redfish/sushy/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

/// A request as the BMC saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub tls: bool,
    pub method: String,
    pub path: String,
    pub authorization: Option<String>,
}

/// An answer.
pub enum Answer {
    Json(u16, Value),
    Text(u16, String),
    Redirect(String),
    /// A 200 whose Content-Length says `announced`; bytes flow until the
    /// client hangs up.
    Announced(u64),
    /// A chunked 200 that never ends.
    Endless,
    /// A 200 with no length, `n` bytes, then the connection closes.
    CloseDelimited(usize),
    /// A 200 announcing this JSON, sent one byte every `every`: each read
    /// is quick, the whole never ends in time.
    Drip(Value, Duration),
    /// Nothing at all, not even the status line, for 5 minutes.
    Silence,
}

type Hook = Box<dyn FnMut(&Seen) -> Option<Answer> + Send>;

pub struct HostileBmc {
    pub url: String,
    pub port: u16,
    pub pin: String,
    resources: Arc<Mutex<HashMap<String, Value>>>,
    seen: Arc<Mutex<Vec<Seen>>>,
    hook: Arc<Mutex<Option<Hook>>>,
}

impl HostileBmc {
    pub fn start() -> HostileBmc {
        HostileBmc::start_named("hostile-bmc", "localhost")
    }

    /// With this common name and DNS name in its certificate.
    pub fn start_named(common_name: &str, dns_name: &str) -> HostileBmc {
        let mut r = HashMap::new();
        r.insert("/redfish/v1/".to_string(), fixture("service-root.json"));
        let mut systems = fixture("systems.json");
        systems["Members"] = json!([{ "@odata.id": SYSTEM }]);
        r.insert("/redfish/v1/Systems".into(), systems);
        let mut system = fixture("system-node0.json");
        system["Links"]["ManagedBy"] = json!([]);
        r.insert(SYSTEM.into(), system);
        r.insert(
            format!("{SYSTEM}/VirtualMedia"),
            fixture("vmedia-collection.json"),
        );
        r.insert(CD.into(), fixture("vmedia-cd.json"));
        r.insert(
            format!("{SYSTEM}/VirtualMedia/Floppy"),
            fixture("vmedia-floppy.json"),
        );
        let ca = dcn::pki::CertificateAuthority::generate("hostile BMC CA").unwrap();
        let leaf = ca
            .issue(&dcn::pki::LeafRequest {
                common_name: common_name.into(),
                dns_names: vec![dns_name.into()],
                ip_addresses: vec!["127.0.0.1".parse().unwrap()],
                usage: dcn::pki::Usage::Server,
            })
            .unwrap();
        let pin = dcn::pki::Pin::of_cert_pem(&leaf.cert_pem)
            .unwrap()
            .to_string();
        let cert =
            rustls::pki_types::CertificateDer::from(dcn::pki::pem_der(&leaf.cert_pem).unwrap());
        let (_, key) = x509_parser::pem::parse_x509_pem(leaf.key_pem.expose().as_bytes()).unwrap();
        let key = rustls::pki_types::PrivateKeyDer::Pkcs8(key.contents.into());
        let tls = Arc::new(
            rustls::ServerConfig::builder_with_provider(dcn::tls::provider())
                .with_safe_default_protocol_versions()
                .unwrap()
                .with_no_client_auth()
                .with_single_cert(vec![cert], key)
                .unwrap(),
        );
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let bmc = HostileBmc {
            url: format!("https://127.0.0.1:{port}"),
            port,
            pin,
            resources: Arc::new(Mutex::new(r)),
            seen: Arc::default(),
            hook: Arc::default(),
        };
        let (res, seen, hook) = (bmc.resources.clone(), bmc.seen.clone(), bmc.hook.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (tls, res, seen, hook) = (tls.clone(), res.clone(), seen.clone(), hook.clone());
                std::thread::spawn(move || {
                    let _ = serve(stream, tls, &res, &seen, &hook);
                });
            }
        });
        bmc
    }

    /// Answer some requests differently: `hook` returns `Some` to override.
    pub fn on(&self, hook: impl FnMut(&Seen) -> Option<Answer> + Send + 'static) {
        *self.hook.lock().unwrap() = Some(Box::new(hook));
    }

    pub fn set(&self, path: &str, v: Value) {
        self.resources.lock().unwrap().insert(path.into(), v);
    }

    /// What it serves at `path`.
    pub fn resource(&self, path: &str) -> Value {
        self.resources.lock().unwrap()[path].clone()
    }

    pub fn edit(&self, path: &str, f: impl FnOnce(&mut Value)) {
        f(self.resources.lock().unwrap().get_mut(path).unwrap());
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    /// `dcn ARGS… --bmc URL --username admin --bmc-pin PIN --timeout 20`.
    pub fn dcn(&self, args: &[&str]) -> Run {
        let mut all: Vec<&str> = args.to_vec();
        all.extend(["--bmc", &self.url, "--username", USER]);
        all.extend(["--bmc-pin", &self.pin, "--timeout", "20"]);
        run_dcn(&all)
    }
}

trait Stream: Read + Write {}
impl<T: Read + Write> Stream for T {}

fn serve(
    stream: TcpStream,
    tls: Arc<rustls::ServerConfig>,
    resources: &Mutex<HashMap<String, Value>>,
    seen: &Mutex<Vec<Seen>>,
    hook: &Mutex<Option<Hook>>,
) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut first = [0u8; 1];
    let is_tls = stream.peek(&mut first)? == 1 && first[0] == 0x16;
    let stream: Box<dyn Stream> = if is_tls {
        let conn = rustls::ServerConnection::new(tls).map_err(std::io::Error::other)?;
        Box::new(rustls::StreamOwned::new(conn, stream))
    } else {
        Box::new(stream)
    };
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or("").to_string();
    let path = parts.next().unwrap_or("").to_string();
    let (mut authorization, mut len) = (None, 0usize);
    loop {
        let mut h = String::new();
        reader.read_line(&mut h)?;
        let Some((k, v)) = h.trim_end().split_once(':') else {
            break;
        };
        match k.to_ascii_lowercase().as_str() {
            "authorization" => authorization = Some(v.trim().to_string()),
            "content-length" => len = v.trim().parse().unwrap_or(0),
            _ => {}
        }
    }
    reader.read_exact(&mut vec![0; len])?;
    let req = Seen {
        tls: is_tls,
        method,
        path,
        authorization,
    };
    seen.lock().unwrap().push(req.clone());
    let answer = hook
        .lock()
        .unwrap()
        .as_mut()
        .and_then(|h| h(&req))
        .unwrap_or_else(|| match resources.lock().unwrap().get(&req.path) {
            Some(v) => Answer::Json(200, v.clone()),
            None => Answer::Json(404, fixture("system-404.json")),
        });
    let out = reader.get_mut();
    let head = |status: u16, extra: &str| {
        format!(
            "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\n{extra}Connection: close\r\n\r\n"
        )
    };
    match answer {
        Answer::Json(status, v) => {
            let body = v.to_string();
            out.write_all(head(status, &format!("Content-Length: {}\r\n", body.len())).as_bytes())?;
            out.write_all(body.as_bytes())?;
        }
        Answer::Text(status, body) => {
            out.write_all(head(status, &format!("Content-Length: {}\r\n", body.len())).as_bytes())?;
            out.write_all(body.as_bytes())?;
        }
        Answer::Redirect(to) => {
            out.write_all(
                head(302, &format!("Location: {to}\r\nContent-Length: 0\r\n")).as_bytes(),
            )?;
        }
        Answer::Announced(n) => {
            out.write_all(head(200, &format!("Content-Length: {n}\r\n")).as_bytes())?;
            let block = vec![b' '; 64 * 1024];
            let mut sent = 0u64;
            while sent < n {
                out.write_all(&block)?;
                sent += block.len() as u64;
            }
        }
        Answer::Endless => {
            out.write_all(head(200, "Transfer-Encoding: chunked\r\n").as_bytes())?;
            let block = vec![b' '; 64 * 1024];
            loop {
                out.write_all(format!("{:x}\r\n", block.len()).as_bytes())?;
                out.write_all(&block)?;
                out.write_all(b"\r\n")?;
            }
        }
        Answer::CloseDelimited(n) => {
            out.write_all(head(200, "").as_bytes())?;
            out.write_all(&vec![b' '; n])?;
        }
        Answer::Drip(v, every) => {
            let body = v.to_string();
            out.write_all(head(200, &format!("Content-Length: {}\r\n", body.len())).as_bytes())?;
            out.flush()?;
            for b in body.as_bytes() {
                std::thread::sleep(every);
                out.write_all(&[*b])?;
                out.flush()?;
            }
        }
        Answer::Silence => std::thread::sleep(Duration::from_secs(300)),
    }
    out.flush()
}

/// A finished run of the binary.
pub struct Run {
    pub ok: bool,
    pub stdout: String,
    pub stderr: String,
    /// Peak resident memory (VmHWM), in KiB.
    pub peak_kib: u64,
    pub took: Duration,
}

impl std::fmt::Display for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "--- stdout\n{}--- stderr\n{}", self.stdout, self.stderr)
    }
}

/// Run the real binary with the password in the environment, watching its
/// peak memory; killed after 60 s. Its output never holds the password.
pub fn run_dcn(args: &[&str]) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let (out, err) = (dir.path().join("out"), dir.path().join("err"));
    let start = Instant::now();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_dcn"))
        .args(args)
        .env("DCN_BMC_PASSWORD", PASSWORD)
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap();
    let status_file = format!("/proc/{}/status", child.id());
    let mut peak_kib = 0;
    let status = loop {
        if let Ok(s) = std::fs::read_to_string(&status_file)
            && let Some(l) = s.lines().find(|l| l.starts_with("VmHWM:"))
        {
            let kib = l.split_whitespace().nth(1).unwrap().parse().unwrap();
            peak_kib = peak_kib.max(kib);
        }
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if start.elapsed() > Duration::from_secs(60) {
            child.kill().unwrap();
            break child.wait().unwrap();
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let run = Run {
        ok: status.success(),
        stdout: std::fs::read_to_string(&out).unwrap(),
        stderr: std::fs::read_to_string(&err).unwrap(),
        peak_kib,
        took: start.elapsed(),
    };
    let token = basic_token();
    for secret in [PASSWORD, token.trim_end_matches('=')] {
        assert!(
            !run.stdout.contains(secret) && !run.stderr.contains(secret),
            "the password leaked:\n{run}"
        );
    }
    run
}
