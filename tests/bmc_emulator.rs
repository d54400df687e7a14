//! `dcn bmc` against a real Redfish service: the sushy-tools emulator (fake
//! driver, TLS with a certificate made here, bcrypt basic auth) on
//! 127.0.0.1, fetching a small ISO from `dcn image serve` on 127.0.0.1.
//! Every assertion about the BMC's state is made through the emulator's own
//! Redfish API, not through dcn.
//!
//! The emulator runs from a virtualenv made on first use (about 5 s) in
//! /var/cache/dcn-test/sushy-venv, or ~/.cache/dcn-test/sushy-venv when that
//! is not writable, or $DCN_SUSHY_VENV. If it cannot be made (no network,
//! no python3-venv) the tests fail and say why: they never pass without
//! running. Each test starts its own emulator with a fresh state
//! directory (the emulator keeps state across restarts) and kills it by PID.

use dcn::host::command::{Cmd, Runner, SystemRunner};
use dcn::secrets::Secret;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

const SUSHY_TOOLS: &str = "sushy-tools==2.2.0";
const NODE0: &str = "27946b59-9e44-4fa7-8e91-f3527a1ef094";
const NODE1: &str = "8a1c3b2e-58d4-4e0e-9d7c-2f1f0c6f7a11";
const USER: &str = "admin";
const PASSWORD: &str = "emulator-test-Pa55";

/// Two systems, as a BMC of a multi-node chassis has: node-0 off, node-1 on.
const TWO_SYSTEMS: &str = r#"[
    {'uuid': '27946b59-9e44-4fa7-8e91-f3527a1ef094', 'name': 'node-0', 'power_state': 'Off',
     'nics': [{'mac': '00:5c:52:31:3a:9c', 'ip': '127.0.0.10'}]},
    {'uuid': '8a1c3b2e-58d4-4e0e-9d7c-2f1f0c6f7a11', 'name': 'node-1', 'power_state': 'On',
     'nics': [{'mac': '00:5c:52:31:3a:9d', 'ip': '127.0.0.11'}]},
]"#;

fn run(cmd: Cmd) -> Result<String, String> {
    SystemRunner::new(false)
        .run(&cmd)
        .map(|o| o.stdout)
        .map_err(|e| format!("{e:#}"))
}

/// The virtualenv with sushy-tools, made once (under a lock: test binaries
/// and threads may ask at the same time).
fn venv() -> PathBuf {
    static VENV: std::sync::OnceLock<Result<PathBuf, String>> = std::sync::OnceLock::new();
    VENV.get_or_init(make_venv)
        .clone()
        .unwrap_or_else(|e| {
            panic!(
                "cannot set up the Redfish emulator ({SUSHY_TOOLS}) for the BMC tests: {e}\n\
                 It needs python3 with the venv module (Debian: python3-venv; tests/run.sh installs it as root) \
                 and access to the Python package index."
            )
        })
}

fn make_venv() -> Result<PathBuf, String> {
    let dir = match std::env::var_os("DCN_SUSHY_VENV") {
        Some(d) => PathBuf::from(d),
        None => {
            let system = PathBuf::from("/var/cache/dcn-test");
            if std::fs::create_dir_all(&system).is_ok() && is_writable(&system) {
                system.join("sushy-venv")
            } else {
                let home = std::env::var_os("HOME")
                    .ok_or("neither /var/cache/dcn-test nor $HOME is usable")?;
                PathBuf::from(home).join(".cache/dcn-test/sushy-venv")
            }
        }
    };
    let parent = dir.parent().ok_or("the venv path has no parent")?;
    std::fs::create_dir_all(parent).map_err(|e| format!("creating {}: {e}", parent.display()))?;
    let lock_path = parent.join(".sushy-venv.lock");
    let lock_file =
        std::fs::File::create(&lock_path).map_err(|e| format!("{}: {e}", lock_path.display()))?;
    let _lock = nix::fcntl::Flock::lock(lock_file, nix::fcntl::FlockArg::LockExclusive)
        .map_err(|(_, e)| format!("locking {}: {e}", lock_path.display()))?;
    let stamp = dir.join(format!(".dcn-{SUSHY_TOOLS}"));
    // A venv outlives the Python it was made with: check that it still runs.
    let works = || {
        run(Cmd::new(
            "checking the sushy-tools virtualenv",
            dir.join("bin/python").to_string_lossy(),
        )
        .args(["-c", "import sushy_tools, bcrypt"])
        .timeout(Duration::from_secs(60)))
        .is_ok()
    };
    if stamp.exists() && works() {
        return Ok(dir);
    }
    let _ = std::fs::remove_dir_all(&dir);
    let started = Instant::now();
    run(Cmd::new("creating a virtualenv for sushy-tools", "python3")
        .args(["-m", "venv"])
        .arg(dir.to_string_lossy())
        .timeout(Duration::from_secs(180)))?;
    run(Cmd::new(
        "installing sushy-tools",
        dir.join("bin/pip").to_string_lossy(),
    )
    .args([
        "install",
        "--disable-pip-version-check",
        "--no-input",
        "--quiet",
        SUSHY_TOOLS,
    ])
    .timeout(Duration::from_secs(600)))?;
    std::fs::write(&stamp, "").map_err(|e| format!("{}: {e}", stamp.display()))?;
    eprintln!(
        "made {} in {:.1}s",
        dir.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(dir)
}

fn is_writable(dir: &Path) -> bool {
    tempfile::tempfile_in(dir).is_ok()
}

/// A running emulator; dropped, it is killed and reaped.
struct Emulator {
    child: Child,
    dir: tempfile::TempDir,
    url: String,
    /// The pin of its certificate's key.
    pin: String,
    cert_der: Vec<u8>,
    ca_file: PathBuf,
    password_file: PathBuf,
    api: reqwest::blocking::Client,
}

impl Drop for Emulator {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            let log =
                std::fs::read_to_string(self.dir.path().join("emulator.log")).unwrap_or_default();
            let tail: Vec<&str> = log.lines().rev().take(40).collect();
            eprintln!(
                "--- emulator log (last lines)\n{}",
                tail.into_iter().rev().collect::<Vec<_>>().join("\n")
            );
        }
    }
}

impl Emulator {
    /// Start one with `systems` (a Python list) and a feature set
    /// (`full`, `vmedia`, `minimum`); a port taken meanwhile is retried.
    fn start(systems: &str, feature_set: &str) -> Emulator {
        let venv = venv();
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let ca = dcn::pki::CertificateAuthority::generate("sushy test CA").unwrap();
        let leaf = ca
            .issue(&dcn::pki::LeafRequest {
                common_name: "127.0.0.1".into(),
                dns_names: vec!["localhost".into()],
                ip_addresses: vec!["127.0.0.1".parse().unwrap()],
                usage: dcn::pki::Usage::Server,
            })
            .unwrap();
        std::fs::write(d.join("server.crt"), &leaf.cert_pem).unwrap();
        std::fs::write(d.join("server.key"), leaf.key_pem.expose()).unwrap();
        std::fs::write(d.join("ca.crt"), ca.cert_pem()).unwrap();
        std::fs::write(d.join("password"), format!("{PASSWORD}\n")).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(d.join("password"), std::fs::Permissions::from_mode(0o600))
            .unwrap();
        // bcrypt at cost 5: the emulator checks the hash on every request
        // (cost 12 costs half a second each).
        let hash = SystemRunner::new(false)
            .run(
                &Cmd::new("hashing the test password", venv.join("bin/python").to_string_lossy())
                    .args([
                        "-c",
                        "import bcrypt,sys; print(bcrypt.hashpw(sys.stdin.read().encode(), bcrypt.gensalt(rounds=5)).decode())",
                    ])
                    .stdin(Secret::new(PASSWORD)),
            )
            .unwrap()
            .stdout;
        std::fs::write(d.join("htpasswd"), format!("{USER}:{}", hash.trim())).unwrap();
        std::fs::create_dir_all(d.join("state/tmp")).unwrap();
        let api = reqwest::blocking::Client::builder()
            .use_preconfigured_tls(dcn::tls::client_config_with_ca(ca.cert_pem()).unwrap())
            .timeout(Duration::from_secs(30))
            .build()
            .unwrap();

        for _ in 0..3 {
            let port = free_port();
            let conf = d.join("emulator.conf");
            std::fs::write(
                &conf,
                format!(
                    "SUSHY_EMULATOR_LISTEN_IP = '127.0.0.1'\n\
                     SUSHY_EMULATOR_LISTEN_PORT = {port}\n\
                     SUSHY_EMULATOR_SSL_CERT = '{d}/server.crt'\n\
                     SUSHY_EMULATOR_SSL_KEY = '{d}/server.key'\n\
                     SUSHY_EMULATOR_AUTH_FILE = '{d}/htpasswd'\n\
                     SUSHY_EMULATOR_FAKE_DRIVER = True\n\
                     SUSHY_EMULATOR_STATE_DIR = '{d}/state'\n\
                     SUSHY_EMULATOR_FEATURE_SET = '{feature_set}'\n\
                     SUSHY_EMULATOR_FAKE_SYSTEMS = {systems}\n",
                    d = d.display()
                ),
            )
            .unwrap();
            let log = std::fs::File::create(d.join("emulator.log")).unwrap();
            // No --debug: its reloader forks, and the PID would not be the server's.
            let mut child = std::process::Command::new(venv.join("bin/sushy-emulator"))
                .arg("--config")
                .arg(&conf)
                .env("TMPDIR", d.join("state/tmp"))
                .stdin(Stdio::null())
                .stdout(log.try_clone().unwrap())
                .stderr(log)
                .spawn()
                .unwrap();
            let url = format!("https://127.0.0.1:{port}");
            if wait_ready(&mut child, &api, &url) {
                return Emulator {
                    child,
                    url,
                    pin: dcn::pki::Pin::of_cert_pem(&leaf.cert_pem)
                        .unwrap()
                        .to_string(),
                    cert_der: dcn::pki::pem_der(&leaf.cert_pem).unwrap(),
                    ca_file: d.join("ca.crt"),
                    password_file: d.join("password"),
                    api,
                    dir,
                };
            }
            let _ = child.kill();
            let _ = child.wait();
            let log = std::fs::read_to_string(d.join("emulator.log")).unwrap_or_default();
            // Another process took the free port meanwhile: try another.
            if !log.contains("Address already in use") {
                panic!("the emulator did not come up within 20s:\n{log}");
            }
        }
        panic!("the emulator found no free port in 3 tries");
    }

    /// GET through the emulator's own API.
    fn get(&self, path: &str) -> Value {
        let r = self
            .api
            .get(format!("{}{path}", self.url))
            .basic_auth(USER, Some(PASSWORD))
            .send()
            .unwrap();
        assert_eq!(r.status(), 200, "GET {path}");
        r.json().unwrap()
    }

    fn system(&self, id: &str) -> Value {
        self.get(&format!("/redfish/v1/Systems/{id}"))
    }

    fn cd(&self, id: &str) -> Value {
        self.get(&format!("/redfish/v1/Systems/{id}/VirtualMedia/Cd"))
    }

    /// Poll PowerState until it is `want` (the emulator applies power
    /// changes 1–11 s late).
    fn wait_power(&self, id: &str, want: &str, within: Duration) -> String {
        let deadline = Instant::now() + within;
        loop {
            let state = self.system(id)["PowerState"]
                .as_str()
                .unwrap_or("")
                .to_string();
            if state == want || Instant::now() >= deadline {
                return state;
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    /// How many requests reached the emulator (its access log).
    fn requests_logged(&self) -> usize {
        std::fs::read_to_string(self.dir.path().join("emulator.log"))
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains("\"GET /") || l.contains("\"POST /") || l.contains("\"PATCH /"))
            .count()
    }

    /// `dcn bmc ARGS --bmc URL --username admin --password-file F` + `tls`.
    fn dcn(&self, args: &[&str], tls: &[&str]) -> Run {
        let pw = self.password_file.to_string_lossy().into_owned();
        let mut all: Vec<&str> = vec!["bmc"];
        all.extend(args);
        all.extend([
            "--bmc",
            &self.url,
            "--username",
            USER,
            "--password-file",
            &pw,
        ]);
        all.extend(tls);
        dcn(&all, &[])
    }

    fn pinned(&self) -> [&str; 2] {
        ["--bmc-pin", &self.pin]
    }
}

/// Ready = an authenticated GET of the systems collection answers 200
/// (the root answers before the driver is built). False if the emulator
/// exited or 20 s passed.
fn wait_ready(child: &mut Child, api: &reqwest::blocking::Client, url: &str) -> bool {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return false;
        }
        let ok = api
            .get(format!("{url}/redfish/v1/Systems"))
            .basic_auth(USER, Some(PASSWORD))
            .timeout(Duration::from_secs(2))
            .send()
            .is_ok_and(|r| r.status() == 200);
        if ok {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

struct Run {
    ok: bool,
    stdout: String,
    stderr: String,
}

impl std::fmt::Display for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "--- stdout\n{}--- stderr\n{}", self.stdout, self.stderr)
    }
}

/// The real binary, with a time limit; its output never holds the password.
fn dcn(args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut cmd = Cmd::new("dcn under test", env!("CARGO_BIN_EXE_dcn"))
        .args(args.iter().copied())
        .timeout(Duration::from_secs(180))
        .unchecked();
    for (k, v) in env {
        cmd = cmd.secret_env(*k, Secret::new(*v));
    }
    let out = SystemRunner::new(false).run(&cmd).unwrap();
    let run = Run {
        ok: out.success(),
        stdout: out.stdout,
        stderr: out.stderr,
    };
    assert!(
        !run.stdout.contains(PASSWORD) && !run.stderr.contains(PASSWORD),
        "the password leaked:\n{run}"
    );
    run
}

/// `dcn image serve` (the library call the subcommand makes) on 127.0.0.1,
/// serving one small ISO-shaped file; returns the ISO's URL.
fn serve_iso(dir: &Path) -> String {
    let mut iso = vec![0u8; 64 * 2048];
    iso[0x8001..0x8006].copy_from_slice(b"CD001");
    std::fs::write(dir.join("edge.iso"), &iso).unwrap();
    let server = dcn::bmc::ImageServer::bind(dir, "127.0.0.1:0".parse().unwrap()).unwrap();
    let addr = server.local_addr().unwrap();
    std::thread::spawn(move || server.run());
    format!("http://{addr}/edge.iso")
}

#[test]
fn boot_status_eject_pinned() {
    let started = Instant::now();
    let emu = Emulator::start(TWO_SYSTEMS, "full");
    let images = tempfile::tempdir().unwrap();
    let iso = serve_iso(images.path());

    let run = emu.dcn(
        &[
            "boot",
            "--system",
            "node-0",
            "--iso-url",
            &iso,
            "--power-timeout",
            "30",
        ],
        &emu.pinned(),
    );
    assert!(run.ok, "{run}");
    assert!(
        run.stdout.contains(&format!(
            "System {NODE0} (node-0) is booting {iso} from virtual media Cd"
        )),
        "{run}"
    );
    for step in [
        "virtual media Cd (CD, DVD)",
        "Inserted",
        "Boot override: Cd (Once)",
        "Power: asked for On",
    ] {
        assert!(run.stderr.contains(step), "{step}\n{run}");
    }
    // Through the emulator's own API.
    let cd = emu.cd(NODE0);
    assert_eq!(cd["Image"], iso.as_str());
    assert_eq!(cd["Inserted"], true);
    assert_eq!(emu.system(NODE0)["Boot"]["BootSourceOverrideTarget"], "Cd");
    assert_eq!(emu.wait_power(NODE0, "On", Duration::from_secs(20)), "On");
    // The other system was not touched.
    assert_eq!(emu.cd(NODE1)["Inserted"], false);

    // Status, with the password from the environment this time.
    let run = dcn(
        &[
            "bmc",
            "status",
            "--output",
            "json",
            "--bmc",
            &emu.url,
            "--username",
            USER,
            "--system",
            NODE0,
            "--bmc-pin",
            &emu.pin,
        ],
        &[("DCN_BMC_PASSWORD", PASSWORD)],
    );
    assert!(run.ok, "{run}");
    let st: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(st["system"], NODE0);
    assert_eq!(st["power_state"], "On");
    assert_eq!(st["boot"]["target"], "Cd");
    assert_eq!(st["virtual_media"][0]["id"], "Cd");
    assert_eq!(st["virtual_media"][0]["image"], iso.as_str());

    let run = emu.dcn(&["eject", "--system", "node-0"], &emu.pinned());
    assert!(run.ok, "{run}");
    assert!(
        run.stdout
            .contains(&format!("Ejected {iso} from virtual media Cd")),
        "{run}"
    );
    let cd = emu.cd(NODE0);
    assert_eq!(cd["Image"], "");
    assert_eq!(cd["Inserted"], false);
    assert_eq!(
        emu.system(NODE0)["Boot"]["BootSourceOverrideTarget"],
        "None"
    );
    let run = emu.dcn(&["eject", "--system", "node-0"], &emu.pinned());
    assert!(run.ok && run.stdout.contains("already empty"), "{run}");
    eprintln!(
        "boot_status_eject_pinned: {:.1}s",
        started.elapsed().as_secs_f64()
    );
}

#[test]
fn tls_credentials_and_system_choice_are_checked() {
    let started = Instant::now();
    let emu = Emulator::start(TWO_SYSTEMS, "full");

    // The fingerprint is what the server holds.
    let run = dcn(
        &["bmc", "fingerprint", "--bmc", &emu.url, "--output", "json"],
        &[],
    );
    assert!(run.ok, "{run}");
    let fp: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(fp["pin"], emu.pin.as_str());
    use sha2::Digest;
    let sha = hex::encode_upper(sha2::Sha256::digest(&emu.cert_der));
    assert_eq!(
        fp["sha256_fingerprint"].as_str().unwrap().replace(':', ""),
        sha
    );

    // A wrong pin: refused during the handshake, before any request.
    let before = emu.requests_logged();
    assert!(
        before > 0,
        "the emulator logs each request (the readiness checks at least)"
    );
    let wrong = format!("sha256:{}", "ab".repeat(32));
    let run = emu.dcn(&["status", "--system", NODE0], &["--bmc-pin", &wrong]);
    assert!(!run.ok);
    assert!(
        run.stderr.contains(&format!(
            "its certificate's public key is {}, not the pinned {wrong}",
            emu.pin
        )),
        "{run}"
    );
    assert!(run.stderr.contains("nothing was sent to it"), "{run}");
    assert_eq!(
        emu.requests_logged(),
        before,
        "no HTTP request may reach a refused BMC"
    );

    // Default trust (the system's CAs, here a bundle without the test CA):
    // refused, with the pin to check.
    let other = dcn::pki::CertificateAuthority::generate("some other CA").unwrap();
    let bundle = emu.dir.path().join("bundle.crt");
    std::fs::write(&bundle, other.cert_pem()).unwrap();
    let pw = emu.password_file.to_string_lossy().into_owned();
    let run = dcn(
        &[
            "bmc",
            "status",
            "--system",
            NODE0,
            "--bmc",
            &emu.url,
            "--username",
            USER,
            "--password-file",
            &pw,
        ],
        &[("SSL_CERT_FILE", bundle.to_str().unwrap())],
    );
    assert!(!run.ok);
    assert!(
        run.stderr.contains("its certificate is not trusted"),
        "{run}"
    );
    assert!(
        run.stderr.contains(&format!("it presented {}", emu.pin)),
        "{run}"
    );

    // --bmc-ca: trusted.
    let run = emu.dcn(
        &["status", "--system", NODE0],
        &["--bmc-ca", emu.ca_file.to_str().unwrap()],
    );
    assert!(run.ok, "{run}");
    assert!(run.stdout.contains("power:          Off"), "{run}");

    // --insecure works, and says so.
    let run = emu.dcn(&["status", "--system", NODE0], &["--insecure"]);
    assert!(run.ok, "{run}");
    assert!(
        run.stderr
            .contains("warning: --insecure: the BMC's certificate is not checked"),
        "{run}"
    );
    assert!(
        run.stderr
            .contains(&format!("pass --bmc-pin {} instead of --insecure", emu.pin)),
        "{run}"
    );

    // A wrong password: the emulator's 401, in plain words.
    let run = dcn(
        &[
            "bmc",
            "status",
            "--system",
            NODE0,
            "--bmc",
            &emu.url,
            "--username",
            USER,
            "--bmc-pin",
            &emu.pin,
        ],
        &[("DCN_BMC_PASSWORD", "wrong-password")],
    );
    assert!(!run.ok);
    assert!(
        run.stderr
            .contains("refused the user name or password of \"admin\""),
        "{run}"
    );
    assert!(run.stderr.contains("401 Unauthorized"), "{run}");
    assert!(
        run.stderr.contains("Incorrect username or password"),
        "{run}"
    );
    assert!(!run.stderr.contains("wrong-password"), "{run}");

    // Two systems and no --system: listed, nothing done.
    let run = emu.dcn(
        &["boot", "--iso-url", "http://127.0.0.1:9/x.iso"],
        &emu.pinned(),
    );
    assert!(!run.ok);
    assert!(
        run.stderr
            .contains("the BMC manages 2 systems; say which with --system ID"),
        "{run}"
    );
    assert!(
        run.stderr.contains(NODE0) && run.stderr.contains(NODE1),
        "{run}"
    );
    assert!(
        run.stderr.contains("node-1") && run.stderr.contains("power On"),
        "{run}"
    );
    assert_eq!(emu.cd(NODE0)["Inserted"], false);

    // A system that does not exist.
    let run = emu.dcn(&["status", "--system", "does-not-exist"], &emu.pinned());
    assert!(!run.ok);
    assert!(
        run.stderr
            .contains("the BMC has no system \"does-not-exist\"; it has:"),
        "{run}"
    );
    eprintln!(
        "tls_credentials_and_system_choice_are_checked: {:.1}s",
        started.elapsed().as_secs_f64()
    );
}

#[test]
fn an_image_the_bmc_cannot_fetch_is_reported_with_the_state_left() {
    let started = Instant::now();
    let emu = Emulator::start(TWO_SYSTEMS, "full");
    let url = format!("http://127.0.0.1:{}/edge.iso", free_port());
    let run = emu.dcn(
        &["boot", "--system", NODE0, "--iso-url", &url],
        &emu.pinned(),
    );
    assert!(!run.ok, "{run}");
    for want in [
        "Boot stopped: dcn changed nothing on the BMC; not done: insert the image, set the boot override, power on or reset.",
        "the BMC could not insert the image into virtual media Cd",
        &format!("The BMC fetches {url} itself"),
        "Failed fetching image from URL",
        "Connection refused",
    ] {
        assert!(run.stderr.contains(want), "{want}\n{run}");
    }
    let cd = emu.cd(NODE0);
    assert_eq!(cd["Inserted"], false);
    let sys = emu.system(NODE0);
    assert_eq!(sys["Boot"]["BootSourceOverrideTarget"], "Hdd");
    assert_eq!(sys["PowerState"], "Off");
    eprintln!(
        "an_image_the_bmc_cannot_fetch...: {:.1}s",
        started.elapsed().as_secs_f64()
    );
}

#[test]
fn a_bmc_without_virtual_media_is_refused() {
    let emu = Emulator::start(TWO_SYSTEMS, "minimum");
    let run = emu.dcn(
        &[
            "boot",
            "--system",
            "node-0",
            "--iso-url",
            "http://127.0.0.1:9/x.iso",
        ],
        &emu.pinned(),
    );
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
}

#[test]
fn power_off_waits_for_the_new_state() {
    let started = Instant::now();
    let emu = Emulator::start(TWO_SYSTEMS, "full");
    let run = emu.dcn(
        &[
            "power",
            "off",
            "--system",
            "node-1",
            "--power-timeout",
            "30",
        ],
        &emu.pinned(),
    );
    assert!(run.ok, "{run}");
    assert!(
        run.stdout.contains(&format!(
            "System {NODE1} (node-1): ForceOff done, power Off after"
        )),
        "{run}"
    );
    assert_eq!(emu.system(NODE1)["PowerState"], "Off");
    eprintln!(
        "power_off_waits_for_the_new_state: {:.1}s",
        started.elapsed().as_secs_f64()
    );
}

/// The media CA goes to the drive once: a second run finds it (compared by
/// its bytes, not by the text the BMC shows) and posts nothing; a drive
/// holding another CA is refused with the way out, not silently kept.
#[test]
fn the_media_ca_is_added_once_and_another_ca_is_not_overwritten() {
    let emu = Emulator::start(TWO_SYSTEMS, "full");
    let client = dcn::bmc::Client::new(&dcn::bmc::ClientOptions {
        url: emu.url.clone(),
        username: USER.into(),
        password: Secret::new(PASSWORD),
        trust: dcn::tls::ServerTrust::Pin(emu.pin.parse().unwrap()),
        timeout: Duration::from_secs(30),
        timeout_from: None,
        retry: dcn::bmc::Retry::default(),
        credentials_from: "the emulator's user".into(),
    })
    .unwrap();
    let ours = dcn::pki::CertificateAuthority::generate("media CA").unwrap();
    let slot_of = |node: &str| {
        let system = dcn::bmc::find_system(&client, Some(node)).unwrap();
        dcn::bmc::cd_slot(&client, &system).unwrap()
    };
    let certs = format!("/redfish/v1/Systems/{NODE0}/VirtualMedia/Cd/Certificates");
    let posts = || {
        std::fs::read_to_string(emu.dir.path().join("emulator.log"))
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains(&format!("POST {certs} HTTP")))
            .count()
    };

    let trust = dcn::bmc::trust_media_ca(&client, &slot_of("node-0"), ours.cert_pem()).unwrap();
    assert_eq!(trust, dcn::bmc::MediaTrust::Verified);
    assert_eq!(emu.cd(NODE0)["VerifyCertificate"], true);
    assert_eq!(emu.get(&certs)["Members"].as_array().unwrap().len(), 1);
    assert_eq!(posts(), 1);

    let again = dcn::bmc::trust_media_ca(&client, &slot_of("node-0"), ours.cert_pem()).unwrap();
    assert_eq!(again, dcn::bmc::MediaTrust::Verified);
    assert_eq!(posts(), 1, "the CA already there was posted again");

    let other = dcn::pki::CertificateAuthority::generate("someone else's CA").unwrap();
    let err = dcn::bmc::trust_media_ca(&client, &slot_of("node-0"), other.cert_pem())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("holds another CA certificate")
            && err.contains(&format!("{certs}/Default"))
            && err.contains("remove it"),
        "{err}"
    );
    let kept = emu.get(&format!("{certs}/Default"));
    assert_eq!(
        dcn::pki::pem_der(kept["CertificateString"].as_str().unwrap()).unwrap(),
        dcn::pki::pem_der(ours.cert_pem()).unwrap()
    );
}
