//! The edge image's SSH host keys (images/edge/rootfs): every installed
//! node makes its own before sshd starts, and mends one a power cut left
//! empty. Until this test, the drop-in ran `ssh-keygen -A` after the
//! packaged `sshd -t`, which fails with no keys: sshd never started on an
//! installed node, and on a busy one its restart loop never stopped.

use std::path::Path;
use std::process::Command;

const SCRIPT: &str = "images/edge/rootfs/usr/share/dcn/ssh-hostkeys.sh";
const DROP_IN: &str = "images/edge/rootfs/etc/systemd/system/ssh.service.d/dcn-hostkeys.conf";

fn run_script(root: &Path) -> String {
    let out = Command::new("sh").arg(SCRIPT).arg(root).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The key's public half, read back from the private key.
fn public_of(key: &Path) -> Option<String> {
    let out = Command::new("ssh-keygen")
        .args(["-y", "-P", "", "-f"])
        .arg(key)
        .output()
        .unwrap();
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn keys_are_made_before_sshd_checks_its_config() {
    let text = std::fs::read_to_string(DROP_IN).unwrap();
    let pre: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("ExecStartPre="))
        .collect();
    assert_eq!(
        pre,
        [
            "",
            "/bin/sh /usr/share/dcn/ssh-hostkeys.sh",
            "/usr/sbin/sshd -t"
        ],
        "the packaged check is reset, then keys, then the check"
    );
}

#[test]
fn a_node_makes_its_keys_and_mends_one_a_power_cut_emptied() {
    let root = tempfile::tempdir().unwrap();
    let ssh = root.path().join("etc/ssh");
    std::fs::create_dir_all(&ssh).unwrap();
    run_script(root.path());
    let key = |kind: &str| ssh.join(format!("ssh_host_{kind}_key"));
    for kind in ["rsa", "ecdsa", "ed25519"] {
        assert!(public_of(&key(kind)).is_some(), "{kind} made");
    }
    let rsa = std::fs::read(key("rsa")).unwrap();
    let ed25519 = std::fs::read(key("ed25519")).unwrap();

    // A power cut just after the keys were made: one private key and one
    // public key are empty on the disk.
    std::fs::write(key("ed25519"), "").unwrap();
    std::fs::write(ssh.join("ssh_host_rsa_key.pub"), "").unwrap();
    let said = run_script(root.path());
    assert!(said.contains("ssh_host_ed25519_key is damaged"), "{said}");
    let mended = std::fs::read(key("ed25519")).unwrap();
    assert!(!mended.is_empty() && mended != ed25519);
    assert!(public_of(&key("ed25519")).is_some());
    // A sound key is kept as it was (clients that know it keep trusting
    // the host), and its public half is written again.
    assert_eq!(std::fs::read(key("rsa")).unwrap(), rsa);
    assert_eq!(
        std::fs::read_to_string(ssh.join("ssh_host_rsa_key.pub")).unwrap(),
        public_of(&key("rsa")).unwrap()
    );
}
