//! Vendor behaviour the Redfish emulator cannot produce, through the real
//! `dcn bmc` binary: a small BMC on 127.0.0.1 speaks TLS (pinned, as an
//! operator would), serves the resources recorded from sushy-tools and
//! answers with the error bodies recorded from real BMCs
//! (tests/fixtures/redfish/README.md says where each comes from). Each test
//! changes one thing and checks what dcn sent and what it told the operator.

use base64::Engine;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const USER: &str = "admin";
const PASSWORD: &str = "quirk-test-Pa55word";
const SYSTEM: &str = "/redfish/v1/Systems/27946b59-9e44-4fa7-8e91-f3527a1ef094";
const MANAGER: &str = "/redfish/v1/Managers/27946b59-9e44-4fa7-8e91-f3527a1ef094";
const CD: &str = "/redfish/v1/Systems/27946b59-9e44-4fa7-8e91-f3527a1ef094/VirtualMedia/Cd";
const INSERT: &str = "VirtualMedia.InsertMedia";
const EJECT: &str = "VirtualMedia.EjectMedia";
const RESET: &str = "ComputerSystem.Reset";
const ISO: &str = "http://192.0.2.10:8080/edge.iso";

fn fixture(name: &str) -> String {
    let path = format!(
        "{}/tests/fixtures/redfish/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn fixture_json(name: &str) -> Value {
    serde_json::from_str(&fixture(name)).unwrap()
}

/// A request as the mock BMC saw it.
#[derive(Debug, Clone)]
struct Req {
    method: String,
    path: String,
    headers: Vec<(String, String)>,
    body: String,
}

impl Req {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }

    fn is(&self, method: &str, path_end: &str) -> bool {
        self.method == method && self.path.ends_with(path_end)
    }
}

/// An answer: status, body, and how long to wait before giving it.
struct Resp {
    status: u16,
    body: String,
    delay: Duration,
}

fn error(status: u16, fixture_name: &str) -> Option<Resp> {
    Some(Resp {
        status,
        body: fixture(fixture_name),
        delay: Duration::ZERO,
    })
}

type Hook = Box<dyn FnMut(&Req, &HashMap<String, Value>) -> Option<Resp> + Send>;

struct State {
    resources: HashMap<String, Value>,
    etags: HashMap<String, String>,
    requests: Vec<Req>,
    hook: Option<Hook>,
}

/// The mock BMC: one system, recorded from sushy-tools, behind TLS.
struct MockBmc {
    url: String,
    pin: String,
    state: Arc<Mutex<State>>,
}

impl MockBmc {
    fn start() -> MockBmc {
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
    fn on(&self, hook: impl FnMut(&Req, &HashMap<String, Value>) -> Option<Resp> + Send + 'static) {
        self.state.lock().unwrap().hook = Some(Box::new(hook));
    }

    fn edit(&self, path: &str, f: impl FnOnce(&mut Value)) {
        let mut st = self.state.lock().unwrap();
        let v = st
            .resources
            .get_mut(path)
            .unwrap_or_else(|| panic!("no {path}"));
        f(v);
    }

    fn insert_resource(&self, path: &str, v: Value) {
        self.state.lock().unwrap().resources.insert(path.into(), v);
    }

    fn remove(&self, path: &str) {
        self.state.lock().unwrap().resources.remove(path);
    }

    fn get(&self, path: &str) -> Value {
        self.state.lock().unwrap().resources[path].clone()
    }

    fn requests(&self, method: &str, path_end: &str) -> Vec<Req> {
        let st = self.state.lock().unwrap();
        st.requests
            .iter()
            .filter(|r| r.is(method, path_end))
            .cloned()
            .collect()
    }

    /// Run `dcn ARGS… --bmc URL --username admin --bmc-pin PIN` with the
    /// password in the environment. Secrets never show in its output.
    fn dcn(&self, args: &[&str]) -> Run {
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

fn serve(
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
fn answer(st: &mut State, req: &Req) -> Resp {
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

fn merge(into: &mut Value, from: &Value) {
    match (into, from) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b {
                merge(a.entry(k.clone()).or_insert(Value::Null), v);
            }
        }
        (a, b) => *a = b.clone(),
    }
}

struct Run {
    ok: bool,
    stdout: String,
    stderr: String,
}

/// The real binary, with a time limit; its output never holds the password.
fn dcn(args: &[&str], env: &[(&str, &str)]) -> Run {
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

fn boot(bmc: &MockBmc, extra: &[&str]) -> Run {
    let mut args = vec!["bmc", "boot", "--iso-url", ISO, "--power-timeout", "5"];
    args.extend(extra);
    bmc.dcn(&args)
}

fn insert_cd(bmc: &MockBmc, image: &str) {
    bmc.edit(CD, |v| {
        v["Image"] = json!(image);
        v["Inserted"] = json!(true);
    });
}

#[test]
fn boot_against_a_well_behaved_bmc() {
    let bmc = MockBmc::start();
    let run = boot(&bmc, &["-vv"]);
    assert!(run.ok, "{run}");
    assert!(
        run.stdout
            .contains("is booting http://192.0.2.10:8080/edge.iso from virtual media Cd"),
        "{run}"
    );
    assert_eq!(bmc.get(CD)["Image"], ISO);
    let patch = &bmc.requests("PATCH", SYSTEM)[0];
    assert_eq!(
        patch.json(),
        json!({"Boot": {"BootSourceOverrideTarget": "Cd", "BootSourceOverrideEnabled": "Once"}})
    );
    assert_eq!(patch.header("If-Match"), None, "no ETag was given");
    // Off → On: ResetType On, and the insert carried the schema's defaults.
    assert_eq!(
        bmc.requests("POST", RESET)[0].json(),
        json!({"ResetType": "On"})
    );
    assert_eq!(
        bmc.requests("POST", INSERT)[0].json(),
        json!({"Image": ISO, "Inserted": true, "WriteProtected": true})
    );
    assert!(bmc.requests("POST", EJECT).is_empty(), "the CD was empty");
}

#[test]
fn supermicro_refusing_inserted_gets_the_image_only() {
    let bmc = MockBmc::start();
    bmc.on(|r, _| {
        (r.is("POST", INSERT) && r.json().get("Inserted").is_some())
            .then(|| error(400, "quirks/a-supermicro-insert-inserted-rejected.400.json"))
            .flatten()
    });
    let run = boot(&bmc, &[]);
    assert!(run.ok, "{run}");
    let inserts = bmc.requests("POST", INSERT);
    assert_eq!(inserts.len(), 2);
    assert_eq!(inserts[1].json(), json!({"Image": ISO}));
    assert!(run.stderr.contains("Supermicro X11/X12"), "{run}");
    assert!(
        run.stderr
            .contains("The property Inserted is not in the list"),
        "{run}"
    );
}

#[test]
fn dell_refusing_write_protected_gets_the_image_only() {
    let bmc = MockBmc::start();
    bmc.on(|r, _| {
        (r.is("POST", INSERT) && r.json().get("WriteProtected").is_some())
            .then(|| {
                error(
                    400,
                    "quirks/a-dell-idrac-insert-writeprotected-value.400.json",
                )
            })
            .flatten()
    });
    let run = boot(&bmc, &[]);
    assert!(run.ok, "{run}");
    assert_eq!(
        bmc.requests("POST", INSERT)[1].json(),
        json!({"Image": ISO})
    );
    assert!(run.stderr.contains("Dell iDRAC"), "{run}");
}

#[test]
fn ami_requiring_transfer_protocol_type_gets_it() {
    for (body, url, proto) in [
        (
            "quirks/b-ami-insert-transferprotocoltype-missing.400.json",
            ISO,
            "HTTP",
        ),
        (
            "quirks/b-generalerror-transferprotocoltype-missing.400.json",
            "https://192.0.2.10/edge.iso",
            "HTTPS",
        ),
    ] {
        let bmc = MockBmc::start();
        bmc.on(move |r, _| {
            (r.is("POST", INSERT) && r.json().get("TransferProtocolType").is_none())
                .then(|| error(400, body))
                .flatten()
        });
        let run = bmc.dcn(&["bmc", "boot", "--iso-url", url, "--power-timeout", "5"]);
        assert!(run.ok, "{body}: {run}");
        let inserts = bmc.requests("POST", INSERT);
        assert_eq!(inserts.len(), 2, "{body}");
        assert_eq!(
            inserts[1].json(),
            json!({"Image": url, "Inserted": true, "WriteProtected": true, "TransferProtocolType": proto})
        );
        assert!(run.stderr.contains("AMI MegaRAC"), "{run}");
    }
}

#[test]
fn hpe_eject_gets_an_empty_json_body() {
    let bmc = MockBmc::start();
    insert_cd(&bmc, "http://192.0.2.10/old.iso");
    // iLO: 415 unless the body is JSON.
    bmc.on(|r, _| {
        let json_body = r.header("Content-Type") == Some("application/json") && r.body == "{}";
        (r.is("POST", EJECT) && !json_body)
            .then(|| error(415, "quirks/c-hpe-ilo-eject-without-body.415.json"))
            .flatten()
    });
    let run = bmc.dcn(&["bmc", "eject"]);
    assert!(run.ok, "{run}");
    assert!(
        run.stdout
            .contains("Ejected http://192.0.2.10/old.iso from virtual media Cd"),
        "{run}"
    );
    assert_eq!(bmc.requests("POST", EJECT).len(), 1);
    assert_eq!(bmc.get(CD)["Inserted"], false);
    // The sushy-tools system reads back a Continuous override to Hdd: left alone.
    assert!(bmc.requests("PATCH", SYSTEM).is_empty());
}

#[test]
fn eject_clears_a_boot_override_to_the_cd() {
    let bmc = MockBmc::start();
    insert_cd(&bmc, ISO);
    bmc.edit(SYSTEM, |v| {
        v["Boot"]["BootSourceOverrideTarget"] = json!("Cd")
    });
    let run = bmc.dcn(&["bmc", "eject"]);
    assert!(run.ok, "{run}");
    assert!(
        run.stdout
            .contains("Boot override to Cd (Continuous) cleared"),
        "{run}"
    );
    assert_eq!(bmc.get(SYSTEM)["Boot"]["BootSourceOverrideTarget"], "None");
    let run = bmc.dcn(&["bmc", "eject"]);
    assert!(run.ok && run.stdout.contains("was already empty"), "{run}");
}

#[test]
fn dell_insert_failing_right_after_an_eject_is_retried() {
    let bmc = MockBmc::start();
    insert_cd(&bmc, "http://192.0.2.10/old.iso");
    let mut failed = false;
    bmc.on(move |r, _| {
        if r.is("POST", INSERT) && !failed {
            failed = true;
            return error(
                500,
                "quirks/d-dell-idrac-insert-while-eject-in-progress.500.json",
            );
        }
        None
    });
    let run = boot(&bmc, &[]);
    assert!(run.ok, "{run}");
    assert_eq!(bmc.requests("POST", EJECT).len(), 1);
    assert_eq!(bmc.requests("POST", INSERT).len(), 2);
    assert!(
        run.stderr
            .contains("Dell iDRAC does this while a previous eject is still finishing"),
        "{run}"
    );
    assert!(run.stderr.contains("attempt 2 of 3"), "{run}");
}

#[test]
fn insert_gives_up_after_three_server_errors_and_says_what_was_changed() {
    let bmc = MockBmc::start();
    insert_cd(&bmc, "http://192.0.2.10/old.iso");
    bmc.on(|r, _| {
        r.is("POST", INSERT)
            .then(|| {
                error(
                    500,
                    "quirks/d-dell-idrac-insert-while-eject-in-progress.500.json",
                )
            })
            .flatten()
    });
    let run = boot(&bmc, &[]);
    assert!(!run.ok, "{run}");
    assert_eq!(bmc.requests("POST", INSERT).len(), 3, "bounded");
    for want in [
        "Boot stopped: dcn changed the BMC: ejected http://192.0.2.10/old.iso from Cd; not done: insert the image, set the boot override, power on or reset.",
        "the BMC could not insert the image into virtual media Cd",
        "check that the BMC (not only this machine) can reach it",
        "The requested operation cannot be completed because of an internal error.",
    ] {
        assert!(run.stderr.contains(want), "{want}\n{run}");
    }
    assert!(bmc.requests("PATCH", SYSTEM).is_empty());
    assert!(bmc.requests("POST", RESET).is_empty());
}

#[test]
fn a_bmc_refusing_once_stops_unless_continuous_is_allowed() {
    let bmc = MockBmc::start();
    bmc.on(|r, _| {
        (r.is("PATCH", SYSTEM) && r.body.contains("\"Once\""))
            .then(|| error(400, "quirks/e-boot-override-once-rejected.400.json"))
            .flatten()
    });
    let run = boot(&bmc, &[]);
    assert!(!run.ok, "{run}");
    for want in [
        "refuses a one-time boot override",
        "Pass --allow-continuous",
        "The value Once for the property BootSourceOverrideEnabled is not in the list",
        "Boot stopped: dcn changed the BMC: inserted http://192.0.2.10:8080/edge.iso into Cd; not done: set the boot override, power on or reset.",
    ] {
        assert!(run.stderr.contains(want), "{want}\n{run}");
    }
    assert!(bmc.requests("POST", RESET).is_empty());
    assert_eq!(bmc.get(SYSTEM)["Boot"]["BootSourceOverrideTarget"], "Hdd");

    let run = boot(&bmc, &["--allow-continuous"]);
    assert!(run.ok, "{run}");
    assert!(
        run.stderr.contains("setting a persistent one (Continuous)"),
        "{run}"
    );
    assert!(
        run.stdout.contains("boot override Cd (Continuous)"),
        "{run}"
    );
    assert_eq!(bmc.get(SYSTEM)["Boot"]["BootSourceOverrideTarget"], "Cd");
}

#[test]
fn an_etag_is_sent_as_if_match() {
    let bmc = MockBmc::start();
    bmc.state
        .lock()
        .unwrap()
        .etags
        .insert(SYSTEM.into(), "W/\"1700000001\"".into());
    bmc.on(|r, _| {
        (r.is("PATCH", SYSTEM) && r.header("If-Match") != Some("W/\"1700000001\""))
            .then(|| error(412, "sushy/system-404.json"))
            .flatten()
    });
    let run = boot(&bmc, &[]);
    assert!(run.ok, "{run}");
    assert_eq!(bmc.requests("PATCH", SYSTEM).len(), 1);
}

#[test]
fn supermicro_usbcd_is_the_cd_boot_target() {
    let bmc = MockBmc::start();
    bmc.edit(SYSTEM, |v| {
        v["Boot"]["BootSourceOverrideTarget@Redfish.AllowableValues"] =
            json!(["None", "Pxe", "Hdd", "UsbCd", "BiosSetup"]);
    });
    let run = boot(&bmc, &[]);
    assert!(run.ok, "{run}");
    assert_eq!(bmc.get(SYSTEM)["Boot"]["BootSourceOverrideTarget"], "UsbCd");
    assert!(
        run.stderr.contains("as Supermicro X11/X12 BMCs do"),
        "{run}"
    );
}

#[test]
fn hpe_refusing_boot_changes_during_post_is_retried() {
    let bmc = MockBmc::start();
    let mut n = 0;
    bmc.on(move |r, _| {
        if r.is("PATCH", SYSTEM) && n < 1 {
            n += 1;
            return error(400, "quirks/f-hpe-ilo-boot-patch-during-post.400.json");
        }
        None
    });
    let run = boot(&bmc, &[]);
    assert!(run.ok, "{run}");
    assert_eq!(bmc.requests("PATCH", SYSTEM).len(), 2);
    assert!(run.stderr.contains("as HPE iLO does"), "{run}");
}

#[test]
fn dell_idrac10_refusing_power_on_for_a_while_is_retried() {
    let bmc = MockBmc::start();
    let mut n = 0;
    bmc.on(move |r, _| {
        if r.is("POST", RESET) && n < 1 {
            n += 1;
            return error(409, "quirks/g-dell-idrac10-power-on-conflict.409.json");
        }
        None
    });
    let run = boot(&bmc, &[]);
    assert!(run.ok, "{run}");
    assert_eq!(bmc.requests("POST", RESET).len(), 2);
    assert!(run.stderr.contains("as Dell iDRAC 10 does"), "{run}");
    assert_eq!(bmc.get(SYSTEM)["PowerState"], "On");
}

#[test]
fn a_powered_on_server_is_reset_with_an_advertised_type() {
    let bmc = MockBmc::start();
    bmc.edit(SYSTEM, |v| {
        v["PowerState"] = json!("On");
        v["Actions"]["#ComputerSystem.Reset"]["ResetType@Redfish.AllowableValues"] =
            json!(["On", "ForceOff", "GracefulRestart", "PowerCycle"]);
    });
    let run = boot(&bmc, &[]);
    assert!(run.ok, "{run}");
    assert_eq!(
        bmc.requests("POST", RESET)[0].json(),
        json!({"ResetType": "PowerCycle"})
    );

    // The allowed types in an ActionInfo resource (DMTF's other way), and
    // none that powers off and on: refused before anything is asked.
    let bmc = MockBmc::start();
    let info = format!("{SYSTEM}/ResetActionInfo");
    bmc.edit(SYSTEM, |v| {
        v["PowerState"] = json!("On");
        let reset = &mut v["Actions"]["#ComputerSystem.Reset"];
        reset
            .as_object_mut()
            .unwrap()
            .remove("ResetType@Redfish.AllowableValues");
        reset["@Redfish.ActionInfo"] = json!(info);
    });
    bmc.insert_resource(
        &info,
        json!({"Parameters": [{"Name": "ResetType", "AllowableValues": ["On", "ForceOff", "Nmi"]}]}),
    );
    let run = boot(&bmc, &[]);
    assert!(!run.ok, "{run}");
    assert!(
        run.stderr
            .contains("allows no reset type that does this (it allows: On, ForceOff, Nmi"),
        "{run}"
    );
    assert!(run.stderr.contains("not done: power on or reset."), "{run}");
    assert!(bmc.requests("POST", RESET).is_empty());
}

#[test]
fn virtual_media_under_the_manager_is_found() {
    let bmc = MockBmc::start();
    let coll = format!("{MANAGER}/VirtualMedia");
    let cd = format!("{coll}/CD1");
    bmc.edit(SYSTEM, |v| {
        v.as_object_mut().unwrap().remove("VirtualMedia");
    });
    bmc.edit(MANAGER, |v| v["VirtualMedia"] = json!({"@odata.id": coll}));
    bmc.insert_resource(&coll, json!({"Members": [{"@odata.id": cd}]}));
    let mut slot = fixture_json("sushy/vmedia-cd.json");
    slot["Id"] = json!("CD1");
    slot["Actions"]["#VirtualMedia.InsertMedia"]["target"] =
        json!(format!("{cd}/Actions/{INSERT}"));
    slot["Actions"]["#VirtualMedia.EjectMedia"]["target"] = json!(format!("{cd}/Actions/{EJECT}"));
    bmc.insert_resource(&cd, slot);
    let run = boot(&bmc, &[]);
    assert!(run.ok, "{run}");
    assert_eq!(bmc.get(&cd)["Image"], ISO);
}

#[test]
fn no_virtual_media_is_a_clear_error_that_changes_nothing() {
    let bmc = MockBmc::start();
    bmc.edit(SYSTEM, |v| {
        v.as_object_mut().unwrap().remove("VirtualMedia");
    });
    bmc.edit(MANAGER, |v| {
        v.as_object_mut().unwrap().remove("VirtualMedia");
    });
    let run = boot(&bmc, &[]);
    assert!(!run.ok, "{run}");
    assert!(
        run.stderr
            .contains("cannot boot an ISO through this BMC: it has no virtual media"),
        "{run}"
    );
    assert!(
        run.stderr.contains("dcn changed nothing on the BMC"),
        "{run}"
    );
    // Only a floppy: also no.
    let bmc = MockBmc::start();
    bmc.edit(&format!("{SYSTEM}/VirtualMedia"), |v| {
        v["Members"] = json!([{"@odata.id": format!("{SYSTEM}/VirtualMedia/Floppy")}]);
    });
    bmc.remove(CD);
    let run = boot(&bmc, &[]);
    assert!(!run.ok, "{run}");
    assert!(
        run.stderr
            .contains("take no CD or DVD: Floppy (Floppy, USBStick)"),
        "{run}"
    );
}

#[test]
fn server_errors_on_reads_are_retried() {
    let bmc = MockBmc::start();
    let mut n = 0;
    bmc.on(move |r, _| {
        if r.is("GET", "/redfish/v1/Systems") && n < 1 {
            n += 1;
            return Some(Resp {
                status: 503,
                body: "<html><body>Service Unavailable</body></html>".into(),
                delay: Duration::ZERO,
            });
        }
        None
    });
    let run = bmc.dcn(&["bmc", "status"]);
    assert!(run.ok, "{run}");
    assert!(
        run.stderr.contains("the BMC answered 503; retrying"),
        "{run}"
    );
    assert!(run.stdout.contains("power:          Off"), "{run}");
}

#[test]
fn wrong_credentials_missing_system_and_slow_bmc_are_clear_errors() {
    let bmc = MockBmc::start();
    let run = dcn(
        &[
            "bmc",
            "status",
            "--bmc",
            &bmc.url,
            "--username",
            USER,
            "--bmc-pin",
            &bmc.pin,
        ],
        &[("DCN_BMC_PASSWORD", "not-the-password")],
    );
    assert!(!run.ok);
    assert!(
        run.stderr
            .contains("refused the user name or password of \"admin\""),
        "{run}"
    );
    assert!(run.stderr.contains("401 Unauthorized"), "{run}");
    assert!(!run.stderr.contains("not-the-password"), "{run}");

    let run = bmc.dcn(&["bmc", "status", "--system", "nope"]);
    assert!(!run.ok);
    assert!(
        run.stderr
            .contains("the BMC has no system \"nope\"; it has:"),
        "{run}"
    );
    assert!(
        run.stderr
            .contains("27946b59-9e44-4fa7-8e91-f3527a1ef094  node-0"),
        "{run}"
    );

    bmc.on(|r, _| {
        r.is("GET", "/redfish/v1/").then(|| Resp {
            status: 200,
            body: "{}".into(),
            delay: Duration::from_secs(3),
        })
    });
    let started = Instant::now();
    let run = bmc.dcn(&["bmc", "status", "--timeout", "1"]);
    assert!(!run.ok);
    assert!(
        run.stderr
            .contains("did not answer GET /redfish/v1/ within 1s"),
        "{run}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "timeouts are not retried"
    );
}

#[test]
fn an_unreachable_bmc_is_a_clear_error() {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("https://127.0.0.1:{port}");
    let pin = format!("sha256:{}", "0".repeat(64));
    let run = dcn(
        &[
            "bmc",
            "status",
            "--bmc",
            &url,
            "--username",
            USER,
            "--bmc-pin",
            &pin,
        ],
        &[("DCN_BMC_PASSWORD", PASSWORD)],
    );
    assert!(!run.ok);
    assert!(
        run.stderr.contains(&format!(
            "cannot connect to the BMC at {url}/ (4 attempt(s))"
        )),
        "{run}"
    );
    assert!(run.stderr.contains("Connection refused"), "{run}");
}

#[test]
fn credentials_are_never_taken_from_the_command_line() {
    let run = dcn(
        &[
            "bmc",
            "status",
            "--bmc",
            "https://admin:hunter2@192.0.2.1",
            "--username",
            USER,
            "--insecure",
        ],
        &[("DCN_BMC_PASSWORD", PASSWORD)],
    );
    assert!(!run.ok);
    assert!(
        run.stderr.contains("--bmc must not carry credentials"),
        "{run}"
    );
    assert!(!run.stderr.contains("hunter2"), "{run}");
    let run = dcn(
        &[
            "bmc",
            "status",
            "--bmc",
            "https://192.0.2.1",
            "--username",
            USER,
            "--insecure",
        ],
        &[],
    );
    assert!(!run.ok);
    assert!(run.stderr.contains("no BMC password"), "{run}");
    let run = dcn(
        &[
            "bmc",
            "status",
            "--bmc",
            "https://192.0.2.1",
            "--password",
            "x",
        ],
        &[],
    );
    assert!(!run.ok);
    assert!(
        run.stderr.contains("unexpected argument '--password'"),
        "{run}"
    );
}
