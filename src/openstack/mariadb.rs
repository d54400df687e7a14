//! The commands that talk to the control plane's MariaDB as root: a query
//! whose rows are read back, and a script fed on stdin (where passwords
//! may travel, never in argv).

use crate::host::Cmd;
use crate::recipes::DatabaseRecipe;
use crate::secrets::Secret;
use std::time::Duration;

/// The server's unit (its recipe's).
pub const UNIT: &str = "mariadb.service";

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

/// SQL that drops the services' databases and their users (`dcn reset`),
/// with the names of the databases it drops; `None` when there are none.
pub fn drop_sql(databases: &[&DatabaseRecipe]) -> Option<(String, Vec<String>)> {
    let mut sql = String::new();
    let mut names = Vec::new();
    for db in databases {
        for name in &db.names {
            sql.push_str(&format!("DROP DATABASE IF EXISTS `{name}`;\n"));
            names.push(name.clone());
        }
        sql.push_str(&format!("DROP USER IF EXISTS '{}'@'127.0.0.1';\n", db.user));
    }
    (!sql.is_empty()).then_some((sql, names))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reset_drops_every_database_of_a_service_and_its_user() {
        let nova = DatabaseRecipe {
            names: vec!["nova".into(), "nova_cell0".into()],
            user: "nova".into(),
            password: "nova_db".into(),
        };
        let (sql, names) = drop_sql(&[&nova]).unwrap();
        assert_eq!(names, ["nova", "nova_cell0"]);
        assert_eq!(
            sql,
            "DROP DATABASE IF EXISTS `nova`;\nDROP DATABASE IF EXISTS `nova_cell0`;\nDROP USER IF EXISTS 'nova'@'127.0.0.1';\n"
        );
        assert!(drop_sql(&[]).is_none());
    }
}
