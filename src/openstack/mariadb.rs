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

/// Idempotent SQL that makes `user` (`'name'@'host'`) exist with `password`
/// and every privilege on each of `databases`: for a control-plane service
/// (which also creates its databases) and for a node's own user at the
/// centre (`require_tls`) alike. It holds the password: feed it on stdin
/// only ([`script`]).
pub fn user_sql(
    user: &str,
    password: &str,
    databases: &[String],
    create_databases: bool,
    require_tls: bool,
) -> String {
    let tls = if require_tls { " REQUIRE SSL" } else { "" };
    let mut sql = format!(
        "CREATE USER IF NOT EXISTS {user} IDENTIFIED BY '{password}'{tls};\nALTER USER {user} IDENTIFIED BY '{password}'{tls};\n"
    );
    for db in databases {
        if create_databases {
            sql.push_str(&format!("CREATE DATABASE IF NOT EXISTS `{db}`;\n"));
        }
        sql.push_str(&format!("GRANT ALL PRIVILEGES ON `{db}`.* TO {user};\n"));
    }
    sql.push_str("FLUSH PRIVILEGES;\n");
    sql
}
