//! What an operator does by hand around the edge lab's joins: carry a
//! bundle from the control plane to a host, export one, and check that a
//! refused join left nothing behind.

use crate::common::Lab;

/// Copy a file from one lab host's disk to another's (an operator's scp).
pub fn hand_over(lab: &Lab, from: &str, to: &str, path: &str) {
    std::fs::copy(lab.host_path(from, path), lab.host_path(to, path)).unwrap();
}

/// Export a bundle on the control plane; returns the CA pin it printed.
pub fn export(lab: &Lab, args: &[&str]) -> String {
    let mut a = vec!["dcn", "bundle", "export"];
    a.extend_from_slice(args);
    let out = lab.ok(&a);
    out.lines()
        .find_map(|l| l.strip_prefix("CA pin: "))
        .expect("a pin")
        .to_string()
}

/// A refused join left no state on `host`.
pub fn untouched(lab: &Lab, host: &str) {
    let out = lab.exec_on(host, &["test", "-e", "/var/lib/dcn"]);
    assert!(
        !out.status.success(),
        "a refused join left /var/lib/dcn on {host}"
    );
}
