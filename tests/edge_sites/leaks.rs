//! No secret in argv, journals, dcn's output or world-readable files, on
//! the control plane and the edges.

use crate::common::Lab;

/// Every password and node credential, searched for in dcn's `outputs`,
/// in every process's argv, the journal and world-readable files.
pub fn no_secret_leaks(lab: &Lab, outputs: &str) {
    let mut secrets: Vec<String> = Vec::new();
    let values = |text: &str| -> Vec<String> {
        text.lines()
            .filter_map(|l| l.split_once(": ").map(|(_, v)| v.trim().to_string()))
            .filter(|v| v.len() >= 20 && v.chars().all(|c| c.is_ascii_alphanumeric()))
            .collect()
    };
    secrets.extend(values(&lab.ok(&[
        "sh",
        "-c",
        "cat /var/lib/dcn/secrets/passwords.yaml",
    ])));
    for edge in ["edge1", "edge2"] {
        secrets.extend(values(
            &lab.ok_on(edge, &["cat", "/var/lib/dcn/node/credentials.yaml"]),
        ));
    }
    assert!(
        secrets.len() >= 12,
        "found the secrets to look for: {}",
        secrets.len()
    );
    for s in &secrets {
        assert!(
            !outputs.contains(s.as_str()),
            "a secret appears in dcn's output"
        );
    }
    let list = secrets.join("\n");
    for host in ["cp", "edge1", "edge2"] {
        let file = lab
            .dir
            .join("hosts")
            .join(host)
            .join("rootfs/root/.secret-scan");
        std::fs::write(&file, &list).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        let scan = lab.exec_on(host, &["sh", "-c", "
            ps -eo args | grep -F -f /root/.secret-scan && echo LEAK:argv;
            journalctl --no-pager -o cat | grep -F -q -f /root/.secret-scan && echo LEAK:journal;
            find / -xdev \\( -path /proc -o -path /sys -o -path /usr -o -path /srv -o -path /root/.secret-scan \\) -prune -o -type f -perm -o=r -size -4M -print0 | xargs -0 -r grep -l -F -f /root/.secret-scan | sed 's/^/LEAK:file /';
            true"]);
        let found = String::from_utf8_lossy(&scan.stdout);
        assert!(!found.contains("LEAK"), "secrets leak on {host}:\n{found}");
    }
}
