//! A service's database and its user, created with the password from the
//! store; the SQL (and the password) reach mysql on stdin only.

use crate::engine::digest;
use crate::engine::{Context, Step};
use crate::openstack::mariadb;
use crate::recipes::{DatabaseRecipe, Values};
use anyhow::{Result, bail};

/// A database (or several) and its user, with the password from the store.
pub struct Database {
    service: String,
    names: Vec<String>,
    user: String,
    password: String,
}

impl Database {
    pub fn new(service: &str, db: &DatabaseRecipe, values: &Values) -> Database {
        Database {
            service: service.into(),
            names: db.names.clone(),
            user: db.user.clone(),
            password: values
                .password
                .get(&db.password)
                .cloned()
                .unwrap_or_default(),
        }
    }
}

impl Step for Database {
    fn name(&self) -> String {
        format!("{}.database", self.service)
    }

    fn describe(&self) -> String {
        format!(
            "create database {} for user {}",
            self.names.join(", "),
            self.user
        )
    }

    fn fingerprint(&self) -> String {
        let names = self.names.join(",");
        digest([
            names.as_bytes(),
            self.user.as_bytes(),
            self.password.as_bytes(),
        ])
    }

    /// Its databases and user are in MariaDB (and it last ran with this
    /// password).
    fn is_done(&self, ctx: &Context) -> Result<bool> {
        if !ctx.journal.is_done(&self.name(), &self.fingerprint()) {
            return Ok(false);
        }
        let names: Vec<String> = self.names.iter().map(|n| format!("'{n}'")).collect();
        let sql = format!(
            "SELECT (SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME IN ({})), (SELECT COUNT(*) FROM mysql.user WHERE User='{}' AND Host='127.0.0.1');",
            names.join(","),
            self.user
        );
        let out = ctx.host.runner.run(
            &mariadb::query(format!("checking the {} database", self.service), &sql).unchecked(),
        )?;
        Ok(out.success()
            && out.stdout.split_whitespace().collect::<Vec<_>>()
                == [self.names.len().to_string(), "1".to_string()])
    }

    fn apply(&self, ctx: &Context) -> Result<()> {
        if self.password.is_empty() {
            bail!(
                "no password for database user {}; run `dcn standalone init --phase secrets`",
                self.user
            );
        }
        // Idempotent SQL; the password travels on stdin only.
        let user = format!("'{}'@'127.0.0.1'", self.user);
        let sql = mariadb::user_sql(&user, &self.password, &self.names, true, false);
        ctx.host.runner.run(&mariadb::script(
            format!("creating the {} database", self.service),
            sql,
        ))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Journal;
    use crate::host::{CmdOutput, Host, RecordingRunner};
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn a_database_is_done_only_while_mariadb_has_it_and_its_user() {
        let step = Database {
            service: "nova".into(),
            names: vec!["nova".into(), "nova_cell0".into()],
            user: "nova".into(),
            password: "pw".into(),
        };
        let mut journal = Journal::default();
        journal.record_step(&step.name(), &step.fingerprint(), Duration::ZERO);
        let done = |answer: &'static str, journal: &Journal| {
            let dir = tempfile::tempdir().unwrap();
            let runner = Arc::new(RecordingRunner::answering(move |_| CmdOutput::ok(answer)));
            let host = Host::with_runner(dir.path(), runner.clone(), false);
            let d = step
                .is_done(&Context {
                    host: &host,
                    journal,
                })
                .unwrap();
            let sql = runner
                .calls()
                .iter()
                .map(|c| c.command_line())
                .collect::<Vec<_>>()
                .join("\n");
            assert!(!sql.contains("pw"), "no password in a check: {sql}");
            d
        };
        assert!(done("2\t1\n", &journal));
        assert!(!done("1\t1\n", &journal), "a database lost");
        assert!(!done("2\t0\n", &journal), "the user lost");
        assert!(
            !done("2\t1\n", &Journal::default()),
            "never made with this password"
        );
    }
}
