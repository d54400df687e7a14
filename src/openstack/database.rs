//! A node's own MariaDB user on the control plane: made over TLS only with
//! every privilege on the databases its recipe names, and dropped with the
//! sessions it still has. The SQL is the control plane's own
//! ([`super::mariadb`]).

use crate::host::Host;
use crate::openstack::mariadb;
use crate::secrets::Secret;
use anyhow::Result;

/// A node's MariaDB user, `'user'@'%'` over TLS only, with every privilege
/// on each of `databases`, or its password set anew (the SQL and the
/// password reach mysql on stdin only).
pub fn ensure_user(host: &Host, user: &str, password: &Secret, databases: &[String]) -> Result<()> {
    let sql = mariadb::user_sql(
        &format!("'{user}'@'%'"),
        password.expose(),
        databases,
        false,
        true,
    );
    host.runner
        .run(&mariadb::script(format!("making MariaDB user {user}"), sql))?;
    Ok(())
}

/// Drop a node's MariaDB user and end the sessions it still has (dropping
/// a user does not end them).
pub fn remove_user(host: &Host, user: &str) -> Result<()> {
    host.runner.run(&mariadb::script(
        format!("removing MariaDB user {user}"),
        format!("DROP USER IF EXISTS '{user}'@'%';\n"),
    ))?;
    let sessions = host.runner.run(&mariadb::query(
        format!("listing the sessions of MariaDB user {user}"),
        &format!("SELECT ID FROM information_schema.PROCESSLIST WHERE USER='{user}';"),
    ))?;
    for id in sessions.stdout.split_whitespace() {
        if id.bytes().all(|b| b.is_ascii_digit()) {
            // A session may end on its own meanwhile: not an error.
            host.runner.run(
                &mariadb::script(
                    format!("ending session {id} of MariaDB user {user}"),
                    format!("KILL CONNECTION {id};\n"),
                )
                .unchecked(),
            )?;
        }
    }
    Ok(())
}
