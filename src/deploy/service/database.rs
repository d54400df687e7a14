//! A service's database and its user, created with the password from the
//! store; the SQL (and the password) reach mysql on stdin only.

use crate::deploy::digest;
use crate::engine::{Context, Step};
use crate::host::Cmd;
use crate::recipes::{DatabaseRecipe, Values};
use crate::secrets::Secret;
use anyhow::{Result, bail};
use std::time::Duration;

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

    fn apply(&self, ctx: &Context) -> Result<()> {
        if self.password.is_empty() {
            bail!(
                "no password for database user {}; run `dcn standalone init --phase secrets`",
                self.user
            );
        }
        // Idempotent SQL; the password travels on stdin only.
        let user = format!("'{}'@'127.0.0.1'", self.user);
        let mut sql = format!(
            "CREATE USER IF NOT EXISTS {user} IDENTIFIED BY '{pw}';\nALTER USER {user} IDENTIFIED BY '{pw}';\n",
            pw = self.password
        );
        for db in &self.names {
            sql.push_str(&format!(
                "CREATE DATABASE IF NOT EXISTS `{db}`;\nGRANT ALL PRIVILEGES ON `{db}`.* TO {user};\n"
            ));
        }
        sql.push_str("FLUSH PRIVILEGES;\n");
        ctx.host.runner.run(
            &Cmd::new(format!("creating the {} database", self.service), "mysql")
                .args(["--user=root", "--batch"])
                .stdin(Secret::new(sql))
                .timeout(Duration::from_secs(120)),
        )?;
        Ok(())
    }
}
