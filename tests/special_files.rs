//! Special files wherever dcn reads a file an operator names (issue 21,
//! failure 6): a FIFO (which hung `config validate`, and `site deploy` as a
//! `passwordFile` or `tls.ca`), a symbolic link to `/dev/zero` (read until
//! the kernel killed dcn at 18 GB), a socket, a directory and a regular
//! file one byte over the reader's limit. Each entry point refuses each of
//! them with exit 1, naming the path and what it is, within seconds. The
//! binary runs with its address space capped and a deadline, so a reader
//! that waits or reads without end fails here instead of hanging the suite
//! or exhausting the machine.

#[path = "support/bundle.rs"]
mod bundle_support;
#[path = "../src/host/read/testing.rs"]
#[allow(dead_code)]
mod testing;

use std::ffi::OsString;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};
use testing::{Special, bounded, special_files};

/// Far longer than a refusal takes (milliseconds).
const DEADLINE: Duration = Duration::from_secs(20);
const MIB: u64 = 1024 * 1024;

/// How a run of dcn ended: `None` when it was killed at the deadline.
struct Run {
    code: Option<i32>,
    stderr: String,
}

/// Run dcn with `args`, its address space capped at 4 GiB, killed at
/// [`DEADLINE`].
fn dcn(args: &[OsString]) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let err = dir.path().join("err");
    let mut child = Command::new("/bin/sh")
        .arg("-c")
        .arg("ulimit -v 4194304 && exec \"$0\" \"$@\"")
        .arg(env!("CARGO_BIN_EXE_dcn"))
        .args(args)
        .env("DCN_BMC_PASSWORD", "pw")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let code = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status.code().unwrap_or(-1));
        }
        if started.elapsed() > DEADLINE {
            child.kill().unwrap();
            child.wait().unwrap();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let stderr = std::fs::read_to_string(&err).unwrap_or_default();
    Run { code, stderr }
}

/// `args(path)` for each special file, made for a reader of `max` bytes
/// (`skip`: those this entry point accepts): refused, naming the file.
fn refuses(max: u64, skip: &[&str], args: impl Fn(&Path) -> Vec<OsString>) {
    let dir = tempfile::tempdir().unwrap();
    for (path, why) in special_files(dir.path(), max) {
        if skip.iter().any(|s| why.contains(s)) {
            continue;
        }
        let run = dcn(&args(&path));
        let shown = args(&path)
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(" ");
        assert!(
            run.code.is_some(),
            "dcn {shown}: still running at {DEADLINE:?}"
        );
        assert_eq!(run.code, Some(1), "dcn {shown}:\n{}", run.stderr);
        assert!(
            run.stderr.contains(&why),
            "dcn {shown}: no {why:?} in:\n{}",
            run.stderr
        );
        assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    }
}

fn args(parts: &[&dyn AsRef<std::ffi::OsStr>]) -> Vec<OsString> {
    parts.iter().map(|p| p.as_ref().to_os_string()).collect()
}

#[test]
fn config_files() {
    refuses(MIB, &[], |p| args(&[&"config", &"validate", &p]));
    refuses(MIB, &[], |p| {
        args(&[&"preflight", &"standalone", &"--config", &p])
    });
    refuses(MIB, &[], |p| {
        args(&[&"site", &"config", &"edge1", &"--file", &p])
    });
}

#[test]
fn bundles() {
    refuses(MIB, &[], |p| args(&[&"bundle", &"inspect", &p]));
    refuses(MIB, &[], |p| args(&[&"bundle", &"verify", &p]));
}

/// An ISO is read by seeking to its payload area, whatever its size (and
/// may be a device: a CD drive); the bundle and the node config are small.
#[test]
fn image_embed_and_show() {
    let dir = tempfile::tempdir().unwrap();
    let ca = dcn::pki::CertificateAuthority::generate("special files test CA").unwrap();
    let bundle = bundle_support::write_lab_bundle(dir.path(), "edge1.tar.gz", 3600, &ca);
    let node = dir.path().join("node.yaml");
    std::fs::write(
        &node,
        "apiVersion: dcn/v1alpha1\nkind: NodeConfig\nhostname: n1\n",
    )
    .unwrap();
    let iso = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/iso/payload-area.iso");
    let out = dir.path().join("out.iso");
    let embed = |iso: &Path, bundle: &Path, node: &Path| {
        args(&[
            &"image",
            &"embed",
            &iso,
            &"--bundle",
            &bundle,
            &"--node",
            &node,
            &"-o",
            &out,
        ])
    };
    refuses(MIB, &[], |p| embed(&iso, p, &node));
    refuses(256 * 1024, &[], |p| embed(&iso, &bundle, p));
    refuses(0, &["bytes, more than"], |p| embed(p, &bundle, &node));
    refuses(0, &["bytes, more than"], |p| args(&[&"image", &"show", &p]));
    assert!(!out.exists());
}

#[test]
fn bmc_password_and_ca_files() {
    let bmc = |extra: &[&dyn AsRef<std::ffi::OsStr>]| {
        let mut a = args(&[
            &"bmc",
            &"status",
            &"--bmc",
            &"https://127.0.0.1:9",
            &"--username",
            &"u",
        ]);
        a.extend(args(extra));
        a
    };
    refuses(4096, &[], |p| bmc(&[&"--password-file", &p, &"--insecure"]));
    refuses(MIB, &[], |p| bmc(&[&"--bmc-ca", &p]));
}

#[test]
fn image_server_certificate_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let serve = dir.path().join("serve");
    std::fs::create_dir(&serve).unwrap();
    let ca = dcn::pki::CertificateAuthority::generate("special files test CA").unwrap();
    let leaf = ca
        .issue(&dcn::pki::LeafRequest {
            common_name: "localhost".into(),
            dns_names: vec!["localhost".into()],
            ip_addresses: Vec::new(),
            usage: dcn::pki::Usage::Server,
        })
        .unwrap();
    let (cert, key) = (dir.path().join("c.pem"), dir.path().join("k.pem"));
    std::fs::write(&cert, &leaf.cert_pem).unwrap();
    std::fs::write(&key, leaf.key_pem.expose()).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    let run = |c: &Path, k: &Path| {
        args(&[
            &"image",
            &"serve",
            &serve,
            &"--listen",
            &"127.0.0.1:0",
            &"--tls-cert",
            &c,
            &"--tls-key",
            &k,
        ])
    };
    refuses(MIB, &[], |p| run(p, &key));
    refuses(MIB, &[], |p| run(&cert, p));
}

/// A host rooted in a folder that `dcn standalone init` would have made a
/// control plane of (only its record: `site deploy` reads the BMC files
/// before anything else of it).
fn control_plane() -> (tempfile::TempDir, dcn::host::Host) {
    let root = tempfile::tempdir().unwrap();
    let host = dcn::host::Host::system(root.path(), false);
    let record = r#"{"roles":["controller"],"services":[],"hostname":"cp","address":"10.0.0.1"}"#;
    (host.files)
        .write(
            dcn::deployment::DEPLOYMENT_FILE,
            record.as_bytes(),
            &dcn::host::FileSpec::secret(),
        )
        .unwrap();
    (root, host)
}

/// `site deploy` with each special file as a node's `passwordFile` and
/// `tls.ca` (the library call `dcn site deploy` makes, on a control plane
/// rooted in a folder).
#[test]
fn site_deploy_password_and_ca_files() {
    bounded(Duration::from_secs(60), || {
        let (_root, host) = control_plane();
        let dir = tempfile::tempdir().unwrap();
        let password = dir.path().join("n1.pw");
        std::fs::write(&password, "pw\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&password, std::fs::Permissions::from_mode(0o600)).unwrap();
        let deploy = |password: &Path, tls: &str| {
            let inventory = dir.path().join("site.yaml");
            std::fs::write(
                &inventory,
                format!(
                    "apiVersion: dcn/v1alpha1\nkind: SiteInventory\nsite: edge1\nimage: /srv/dcn-edge.iso\nmedia:\n  listen: 127.0.0.1:8443\nnodes:\n- hostname: n1\n  bmc:\n    endpoint: https://127.0.0.1:9\n    tls: {tls}\n    credentials:\n      username: admin\n      passwordFile: {}\n",
                    password.display()
                ),
            )
            .unwrap();
            let opts = dcn::centre::site_deploy::DeployOptions {
                inventory,
                nodes: Vec::new(),
                parallel: 1,
                limits: dcn::centre::site_deploy::node::Limits {
                    install: Duration::from_secs(5),
                    join: Duration::from_secs(5),
                    poll: Duration::from_millis(100),
                },
            };
            format!(
                "{:#}",
                dcn::centre::site_deploy::run(
                    &dcn::recipes::Recipes::embedded().unwrap(),
                    &host,
                    &opts
                )
                .unwrap_err()
            )
        };
        for (i, special) in Special::ALL.into_iter().enumerate() {
            let bad = dir.path().join(format!("pw-{i}"));
            let why = format!("{} {}", bad.display(), special.make(&bad, 4096));
            let e = deploy(&bad, "{insecure: true}");
            assert!(e.contains(&why) && e.contains("node n1's BMC"), "{e}");
            let bad = dir.path().join(format!("ca-{i}"));
            let why = format!("{} {}", bad.display(), special.make(&bad, MIB));
            let e = deploy(&password, &format!("{{ca: {}}}", bad.display()));
            assert!(e.contains(&why) && e.contains("tls.ca"), "{e}");
        }
    });
}

/// `dcn join` with each special file as its bundle (on a host rooted in a
/// folder: the join takes the node's lock before it reads the bundle).
#[test]
fn join_bundle() {
    bounded(Duration::from_secs(60), || {
        let dir = tempfile::tempdir().unwrap();
        for (path, why) in special_files(dir.path(), MIB) {
            let root = tempfile::tempdir().unwrap();
            let host = dcn::host::Host::system(root.path(), false);
            let opts = dcn::edge::join::JoinOptions {
                bundle: path,
                ca_pin: None,
                hostname: Some("n1".into()),
                my_ip: None,
                timeout: Duration::from_secs(5),
                packages: "mirror".parse().unwrap(),
                ignore_preflight: Vec::new(),
            };
            let Err(e) =
                dcn::edge::join::join(&dcn::recipes::Recipes::embedded().unwrap(), &host, &opts)
            else {
                panic!("{why}: joined");
            };
            let e = format!("{e:#}");
            assert!(e.contains(&why), "{e}");
        }
    });
}
