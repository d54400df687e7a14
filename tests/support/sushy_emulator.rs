//! The real Redfish service `dcn bmc` is tested against in tests/bmc_emulator.rs: the sushy-tools emulator (fake
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

#![allow(dead_code)]

use dcn::host::command::{Cmd, Runner, SystemRunner};
use dcn::secrets::Secret;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

pub const SUSHY_TOOLS: &str = "sushy-tools==2.2.0";
pub const NODE0: &str = "27946b59-9e44-4fa7-8e91-f3527a1ef094";
pub const NODE1: &str = "8a1c3b2e-58d4-4e0e-9d7c-2f1f0c6f7a11";
pub const USER: &str = "admin";
pub const PASSWORD: &str = "emulator-test-Pa55";

/// Two systems, as a BMC of a multi-node chassis has: node-0 off, node-1 on.
pub const TWO_SYSTEMS: &str = r#"[
    {'uuid': '27946b59-9e44-4fa7-8e91-f3527a1ef094', 'name': 'node-0', 'power_state': 'Off',
     'nics': [{'mac': '00:5c:52:31:3a:9c', 'ip': '127.0.0.10'}]},
    {'uuid': '8a1c3b2e-58d4-4e0e-9d7c-2f1f0c6f7a11', 'name': 'node-1', 'power_state': 'On',
     'nics': [{'mac': '00:5c:52:31:3a:9d', 'ip': '127.0.0.11'}]},
]"#;

pub fn run(cmd: Cmd) -> Result<String, String> {
    SystemRunner::new(false)
        .run(&cmd)
        .map(|o| o.stdout)
        .map_err(|e| format!("{e:#}"))
}

/// The virtualenv with sushy-tools, made once (under a lock: test binaries
/// and threads may ask at the same time).
pub fn venv() -> PathBuf {
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

pub fn make_venv() -> Result<PathBuf, String> {
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

pub fn is_writable(dir: &Path) -> bool {
    tempfile::tempfile_in(dir).is_ok()
}

/// A running emulator; dropped, it is killed and reaped.
pub struct Emulator {
    pub child: Child,
    pub dir: tempfile::TempDir,
    pub url: String,
    /// The pin of its certificate's key.
    pub pin: String,
    pub cert_der: Vec<u8>,
    pub ca_file: PathBuf,
    pub password_file: PathBuf,
    pub api: reqwest::blocking::Client,
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
    pub fn start(systems: &str, feature_set: &str) -> Emulator {
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
    pub fn get(&self, path: &str) -> Value {
        let r = self
            .api
            .get(format!("{}{path}", self.url))
            .basic_auth(USER, Some(PASSWORD))
            .send()
            .unwrap();
        assert_eq!(r.status(), 200, "GET {path}");
        r.json().unwrap()
    }

    pub fn system(&self, id: &str) -> Value {
        self.get(&format!("/redfish/v1/Systems/{id}"))
    }

    pub fn cd(&self, id: &str) -> Value {
        self.get(&format!("/redfish/v1/Systems/{id}/VirtualMedia/Cd"))
    }

    /// Poll PowerState until it is `want` (the emulator applies power
    /// changes 1–11 s late).
    pub fn wait_power(&self, id: &str, want: &str, within: Duration) -> String {
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
    pub fn requests_logged(&self) -> usize {
        std::fs::read_to_string(self.dir.path().join("emulator.log"))
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains("\"GET /") || l.contains("\"POST /") || l.contains("\"PATCH /"))
            .count()
    }

    /// `dcn bmc ARGS --bmc URL --username admin --password-file F` + `tls`.
    pub fn dcn(&self, args: &[&str], tls: &[&str]) -> Run {
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

    pub fn pinned(&self) -> [&str; 2] {
        ["--bmc-pin", &self.pin]
    }
}

/// Ready = an authenticated GET of the systems collection answers 200
/// (the root answers before the driver is built). False if the emulator
/// exited or 20 s passed.
pub fn wait_ready(child: &mut Child, api: &reqwest::blocking::Client, url: &str) -> bool {
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

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

pub struct Run {
    pub ok: bool,
    pub stdout: String,
    pub stderr: String,
}

impl std::fmt::Display for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "--- stdout\n{}--- stderr\n{}", self.stdout, self.stderr)
    }
}

/// The real binary, with a time limit; its output never holds the password.
pub fn dcn(args: &[&str], env: &[(&str, &str)]) -> Run {
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
pub fn serve_iso(dir: &Path) -> String {
    let mut iso = vec![0u8; 64 * 2048];
    iso[0x8001..0x8006].copy_from_slice(b"CD001");
    std::fs::write(dir.join("edge.iso"), &iso).unwrap();
    let server = dcn::bmc::ImageServer::bind(dir, "127.0.0.1:0".parse().unwrap()).unwrap();
    let addr = server.local_addr().unwrap();
    std::thread::spawn(move || server.run());
    format!("http://{addr}/edge.iso")
}
