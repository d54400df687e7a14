//! The commands that talk to the control plane's MariaDB as root: a query
//! whose rows are read back, and a script fed on stdin (where passwords
//! may travel, never in argv).

use crate::host::Cmd;
use crate::secrets::Secret;
use std::time::Duration;

/// A read-only query; its rows on stdout, tab-separated, no header.
pub fn query(what: String, sql: &str) -> Cmd {
    Cmd::new(what, "mysql")
        .args(["--user=root", "--batch", "--skip-column-names", "-e", sql])
        .timeout(Duration::from_secs(60))
        .read_only()
}

/// Statements run from stdin.
pub fn script(what: String, sql: String) -> Cmd {
    Cmd::new(what, "mysql")
        .args(["--user=root", "--batch"])
        .stdin(Secret::new(sql))
        .timeout(Duration::from_secs(120))
}
