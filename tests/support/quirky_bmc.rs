//! A BMC on 127.0.0.1 with the quirks of real vendors, for tests/bmc_quirks_*.rs:
//! it speaks TLS (pinned, as an operator would), serves the resources
//! recorded from sushy-tools and answers with the error bodies recorded from
//! real BMCs (tests/fixtures/redfish/README.md says where each comes from).
//! `dcn` and `boot` run the real `dcn bmc` binary against it.

#![allow(dead_code)]

use base64::Engine;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub const USER: &str = "admin";
pub const PASSWORD: &str = "quirk-test-Pa55word";
pub const SYSTEM: &str = "/redfish/v1/Systems/27946b59-9e44-4fa7-8e91-f3527a1ef094";
pub const MANAGER: &str = "/redfish/v1/Managers/27946b59-9e44-4fa7-8e91-f3527a1ef094";
pub const CD: &str = "/redfish/v1/Systems/27946b59-9e44-4fa7-8e91-f3527a1ef094/VirtualMedia/Cd";
pub const INSERT: &str = "VirtualMedia.InsertMedia";
pub const EJECT: &str = "VirtualMedia.EjectMedia";
pub const RESET: &str = "ComputerSystem.Reset";
pub const ISO: &str = "http://192.0.2.10:8080/edge.iso";

pub fn fixture(name: &str) -> String {
    let path = format!(
        "{}/tests/fixtures/redfish/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

pub fn fixture_json(name: &str) -> Value {
    serde_json::from_str(&fixture(name)).unwrap()
}

/// A request as the mock BMC saw it.
#[derive(Debug, Clone)]
pub struct Req {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Req {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }

    pub fn is(&self, method: &str, path_end: &str) -> bool {
        self.method == method && self.path.ends_with(path_end)
    }
}

/// An answer: status, body, and how long to wait before giving it.
pub struct Resp {
    pub status: u16,
    pub body: String,
    pub delay: Duration,
}

pub fn error(status: u16, fixture_name: &str) -> Option<Resp> {
    Some(Resp {
        status,
        body: fixture(fixture_name),
        delay: Duration::ZERO,
    })
}

type Hook = Box<dyn FnMut(&Req, &HashMap<String, Value>) -> Option<Resp> + Send>;

pub struct State {
    pub resources: HashMap<String, Value>,
    pub etags: HashMap<String, String>,
    pub requests: Vec<Req>,
    pub hook: Option<Hook>,
}

/// The mock BMC: one system, recorded from sushy-tools, behind TLS.
pub struct MockBmc {
    pub url: String,
    pub pin: String,
    pub state: Arc<Mutex<State>>,
}

impl MockBmc {
    pub fn start() -> MockBmc {
        let mut resources = HashMap::new();
        resources.insert(
            "/redfish/v1/".into(),
            fixture_json("sushy/service-root.json"),
        );
        let mut systems = fixture_json("sushy/systems.json");
        // One system (sushy-tools was recorded with two).
        systems["Members"] = json!([{"@odata.id": SYSTEM}]);
        resources.insert("/redfish/v1/Systems".into(), systems);
        resources.insert(SYSTEM.into(), fixture_json("sushy/system-node0.json"));
        let mut managers = fixture_json("sushy/managers.json");
        managers["Members"] = json!([{"@odata.id": MANAGER}]);
        resources.insert("/redfish/v1/Managers".into(), managers);
        resources.insert(MANAGER.into(), fixture_json("sushy/manager-node0.json"));
        resources.insert(
            format!("{SYSTEM}/VirtualMedia"),
            fixture_json("sushy/vmedia-collection.json"),
        );
        resources.insert(CD.into(), fixture_json("sushy/vmedia-cd.json"));
        resources.insert(
            format!("{SYSTEM}/VirtualMedia/Floppy"),
            fixture_json("sushy/vmedia-floppy.json"),
        );
        let state = Arc::new(Mutex::new(State {
            resources,
            etags: HashMap::new(),
            requests: Vec::new(),
            hook: None,
        }));

        let ca = dcn::pki::CertificateAuthority::generate("mock BMC CA").unwrap();
        let leaf = ca
            .issue(&dcn::pki::LeafRequest {
                common_name: "mock-bmc".into(),
                dns_names: vec!["localhost".into()],
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
        let url = format!("https://{}", listener.local_addr().unwrap());
        let st = state.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (st, tls) = (st.clone(), tls.clone());
                std::thread::spawn(move || {
                    let _ = serve(stream, tls, &st);
                });
            }
        });
        MockBmc { url, pin, state }
    }

    /// Answer some requests differently: `hook` returns `Some` to override.
    pub fn on(
        &self,
        hook: impl FnMut(&Req, &HashMap<String, Value>) -> Option<Resp> + Send + 'static,
    ) {
        self.state.lock().unwrap().hook = Some(Box::new(hook));
    }

    pub fn edit(&self, path: &str, f: impl FnOnce(&mut Value)) {
        let mut st = self.state.lock().unwrap();
        let v = st
            .resources
            .get_mut(path)
            .unwrap_or_else(|| panic!("no {path}"));
        f(v);
    }

    pub fn insert_resource(&self, path: &str, v: Value) {
        self.state.lock().unwrap().resources.insert(path.into(), v);
    }

    pub fn remove(&self, path: &str) {
        self.state.lock().unwrap().resources.remove(path);
    }

    pub fn get(&self, path: &str) -> Value {
        self.state.lock().unwrap().resources[path].clone()
    }

    pub fn requests(&self, method: &str, path_end: &str) -> Vec<Req> {
        let st = self.state.lock().unwrap();
        st.requests
            .iter()
            .filter(|r| r.is(method, path_end))
            .cloned()
            .collect()
    }

    /// Run `dcn ARGS… --bmc URL --username admin --bmc-pin PIN` with the
    /// password in the environment. Secrets never show in its output.
    pub fn dcn(&self, args: &[&str]) -> Run {
        let mut all: Vec<&str> = args.to_vec();
        all.extend([
            "--bmc",
            &self.url,
            "--username",
            USER,
            "--bmc-pin",
            &self.pin,
        ]);
        dcn(&all, &[("DCN_BMC_PASSWORD", PASSWORD)])
    }
}

pub fn serve(
    stream: TcpStream,
    tls: Arc<rustls::ServerConfig>,
    state: &Mutex<State>,
) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let conn = rustls::ServerConnection::new(tls).map_err(std::io::Error::other)?;
    let mut reader = BufReader::new(rustls::StreamOwned::new(conn, stream));
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let mut parts = line.split_whitespace();
    let (method, path) = (
        parts.next().unwrap_or("").to_string(),
        parts.next().unwrap_or("").to_string(),
    );
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        reader.read_line(&mut h)?;
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.push((k.trim().to_string(), v.trim().to_string()));
        }
    }
    let len: usize = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; len];
    reader.read_exact(&mut body)?;
    let req = Req {
        method,
        path,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    };
    let (resp, etag) = {
        let mut st = state.lock().unwrap();
        st.requests.push(req.clone());
        let resp = answer(&mut st, &req);
        (resp, st.etags.get(&req.path).cloned())
    };
    std::thread::sleep(resp.delay);
    let mut head = format!(
        "HTTP/1.1 {} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
        resp.status,
        resp.body.len()
    );
    if let Some(tag) = etag.filter(|_| req.method == "GET") {
        head.push_str(&format!("ETag: {tag}\r\n"));
    }
    head.push_str("\r\n");
    let out = reader.get_mut();
    out.write_all(head.as_bytes())?;
    out.write_all(resp.body.as_bytes())?;
    out.conn.send_close_notify();
    out.flush()
}

/// What a well-behaved BMC does, unless the hook says otherwise.
pub fn answer(st: &mut State, req: &Req) -> Resp {
    let ok = |status: u16, body: String| Resp {
        status,
        body,
        delay: Duration::ZERO,
    };
    let expected = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{USER}:{PASSWORD}"))
    );
    if req.header("Authorization") != Some(expected.as_str()) {
        return ok(401, fixture("sushy/auth-wrong-password.401.json"));
    }
    if let Some(hook) = st.hook.as_mut()
        && let Some(r) = hook(req, &st.resources)
    {
        return r;
    }
    let not_found = || fixture("sushy/system-404.json");
    match req.method.as_str() {
        "GET" => match st.resources.get(&req.path) {
            Some(v) => ok(200, v.to_string()),
            None => ok(404, not_found()),
        },
        "PATCH" => match st.resources.get_mut(&req.path) {
            Some(v) => {
                merge(v, &req.json());
                ok(204, String::new())
            }
            None => ok(404, not_found()),
        },
        "POST" => {
            let Some((resource, action)) = req.path.split_once("/Actions/") else {
                return ok(405, not_found());
            };
            let Some(v) = st.resources.get_mut(resource) else {
                return ok(404, not_found());
            };
            let body = req.json();
            match action {
                INSERT => {
                    v["Image"] = body["Image"].clone();
                    v["Inserted"] = json!(true);
                }
                EJECT => {
                    v["Image"] = json!("");
                    v["Inserted"] = json!(false);
                }
                RESET => {
                    let on = !matches!(
                        body["ResetType"].as_str(),
                        Some("ForceOff" | "GracefulShutdown")
                    );
                    v["PowerState"] = json!(if on { "On" } else { "Off" });
                }
                _ => return ok(404, not_found()),
            }
            ok(204, String::new())
        }
        _ => ok(405, not_found()),
    }
}

pub fn merge(into: &mut Value, from: &Value) {
    match (into, from) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b {
                merge(a.entry(k.clone()).or_insert(Value::Null), v);
            }
        }
        (a, b) => *a = b.clone(),
    }
}

pub struct Run {
    pub ok: bool,
    pub stdout: String,
    pub stderr: String,
}

/// The real binary, with a time limit; its output never holds the password.
pub fn dcn(args: &[&str], env: &[(&str, &str)]) -> Run {
    use dcn::host::command::{Cmd, Runner, SystemRunner};
    let mut cmd = Cmd::new("dcn under test", env!("CARGO_BIN_EXE_dcn"))
        .args(args.iter().copied())
        .timeout(Duration::from_secs(120))
        .unchecked();
    for (k, v) in env {
        cmd = cmd.secret_env(*k, dcn::secrets::Secret::new(*v));
    }
    let out = SystemRunner::new(false).run(&cmd).unwrap();
    let run = Run {
        ok: out.success(),
        stdout: out.stdout,
        stderr: out.stderr,
    };
    assert!(
        !run.stdout.contains(PASSWORD) && !run.stderr.contains(PASSWORD),
        "the password leaked:\n{}\n{}",
        run.stdout,
        run.stderr
    );
    run
}

impl std::fmt::Display for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "--- stdout\n{}--- stderr\n{}", self.stdout, self.stderr)
    }
}

pub fn boot(bmc: &MockBmc, extra: &[&str]) -> Run {
    let mut args = vec!["bmc", "boot", "--iso-url", ISO, "--power-timeout", "5"];
    args.extend(extra);
    bmc.dcn(&args)
}

pub fn insert_cd(bmc: &MockBmc, image: &str) {
    bmc.edit(CD, |v| {
        v["Image"] = json!(image);
        v["Inserted"] = json!(true);
    });
}
