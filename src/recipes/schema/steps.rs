//! What runs after a service's files are written (setup commands), and
//! how dcn knows it works (health checks).

use serde::Deserialize;
use std::collections::BTreeMap;

/// A setup command.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SetupCommand {
    /// Journal name of the step.
    pub name: String,
    /// argv; templated. Must not contain secrets.
    pub run: Vec<String>,
    /// Run as this user (through `runuser`).
    #[serde(default)]
    pub user: Option<String>,
    /// Environment variables set to passwords: variable -> password name.
    #[serde(default)]
    pub secret_env: BTreeMap<String, String>,
    /// Attempts, one second apart (for commands that race a starting
    /// daemon's socket).
    #[serde(default = "one")]
    pub attempts: u32,
    /// Time limit in seconds.
    #[serde(default = "setup_timeout")]
    pub timeout: u64,
    /// Exit codes that count as success besides 0.
    #[serde(default)]
    pub ok_codes: Vec<i32>,
    /// Only for hosts whose roles include this one.
    #[serde(default)]
    pub when_role: Option<String>,
    /// Run after the service's units are started (default: before).
    #[serde(default)]
    pub after_start: bool,
    /// A read-only command (argv, templated; run as root) whose success
    /// means the command's effect is there: a run that finds it (and last
    /// ran the same command) skips the command. A power cut can lose what
    /// another daemon had not written back, so the journal alone never
    /// decides.
    #[serde(default)]
    pub check: Option<Vec<String>>,
    /// The same as a query to MariaDB (as root): the effect is there when
    /// it returns a row.
    #[serde(default)]
    pub check_sql: Option<String>,
    /// The command is cheap and idempotent, and runs on every run instead
    /// of being checked. Every command has exactly one of `check`,
    /// `checkSql` and `rerun`.
    #[serde(default)]
    pub rerun: bool,
    /// The service's databases whose schema this command creates or
    /// migrates. MariaDB cannot roll back a schema change, so a sync cut
    /// halfway leaves tables that its check may find and that make its next
    /// run fail: a sync that dcn saw start and not end is never done, and
    /// one that began on empty databases begins again from empty ones.
    #[serde(default)]
    pub schema: Vec<String>,
}

fn one() -> u32 {
    1
}

fn setup_timeout() -> u64 {
    600
}

/// A health check.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub enum HealthCheck {
    /// The port accepts TCP connections (templated host: `{{ cp.address }}`).
    Tcp { host: String, port: u16 },
    /// `GET url` answers with a status below 500.
    Http { url: String },
    /// A command exits 0.
    Command { run: Vec<String> },
    /// A unit is active.
    Unit { name: String },
}
