//! A schema sync that a power cut may interrupt. MariaDB commits each
//! schema change by itself, so a sync cut halfway leaves some tables made
//! and its version table unwritten: the tables fool a check that looks for
//! one, and the next sync fails on the tables it finds. Before a sync runs,
//! dcn records on the disk that it started and whether its databases were
//! empty; it removes the record once the sync has ended. A record found on
//! a later run means the sync never ended: it runs again, from empty
//! databases when they were empty before it.

use crate::engine::Context;
use crate::host::FileSpec;
use crate::openstack::mariadb;
use anyhow::{Context as _, Result, bail};

/// Where the records of started syncs live. Left out of backups: a sync
/// belongs to this host's run, not to the cloud's state.
const RECORDS_DIR: &str = crate::paths::SCHEMA_SYNCS_DIR;

/// The schema sync of one setup command.
pub struct SchemaSync {
    /// `service.command`: names the record.
    step: String,
    databases: Vec<String>,
}

/// What a record says of the sync that wrote it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Started {
    /// On databases with no tables: whatever is there now is a part of it.
    OnEmpty,
    /// On databases that held a schema (an upgrade): run it again.
    OnSchema,
}

impl SchemaSync {
    pub fn new(step: String, databases: Vec<String>) -> SchemaSync {
        SchemaSync { step, databases }
    }

    fn record(&self) -> String {
        format!("{RECORDS_DIR}/{}", self.step)
    }

    /// The sync that a record says started and never ended, if any.
    pub fn interrupted(&self, ctx: &Context) -> Result<Option<Started>> {
        let Some(text) = ctx.host.files.read_string(self.record())? else {
            return Ok(None);
        };
        Ok(Some(if text.trim() == "empty" {
            Started::OnEmpty
        } else {
            Started::OnSchema
        }))
    }

    /// Before the sync: put back empty databases when an interrupted sync
    /// began on empty ones, and record on the disk that this one starts.
    pub fn begin(&self, ctx: &Context) -> Result<()> {
        let started = match self.interrupted(ctx)? {
            Some(Started::OnEmpty) => {
                tracing::warn!(
                    "{}: the schema sync that began on empty databases ({}) did not end; it starts again from empty ones",
                    self.step,
                    self.databases.join(", ")
                );
                self.empty_databases(ctx)?;
                Started::OnEmpty
            }
            Some(Started::OnSchema) => {
                tracing::warn!("{}: the schema sync did not end; it runs again", self.step);
                Started::OnSchema
            }
            None if self.tables(ctx)? == 0 => Started::OnEmpty,
            None => Started::OnSchema,
        };
        let text = match started {
            Started::OnEmpty => "empty\n",
            Started::OnSchema => "schema\n",
        };
        let files = &ctx.host.files;
        files.ensure_dir(RECORDS_DIR, &FileSpec::private_dir())?;
        files.write(self.record(), text.as_bytes(), &FileSpec::secret())?;
        Ok(())
    }

    /// After the sync ended well.
    pub fn end(&self, ctx: &Context) -> Result<()> {
        ctx.host.files.remove(self.record())?;
        Ok(())
    }

    /// How many tables the databases hold.
    fn tables(&self, ctx: &Context) -> Result<u64> {
        let names: Vec<String> = self.databases.iter().map(|n| format!("'{n}'")).collect();
        let sql = format!(
            "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema IN ({})",
            names.join(",")
        );
        let out = ctx.host.runner.run(&mariadb::query(
            format!("counting the tables of {}", self.step),
            &sql,
        ))?;
        out.stdout
            .trim()
            .parse()
            .with_context(|| format!("MariaDB's count of tables: {:?}", out.stdout.trim()))
    }

    /// Drop and make again the databases. Their users' grants are kept
    /// apart from them (`mysql.db`), so they hold for the new ones.
    fn empty_databases(&self, ctx: &Context) -> Result<()> {
        if self.databases.is_empty() {
            bail!("{}: a schema sync names no database", self.step);
        }
        let mut sql = String::new();
        for db in &self.databases {
            sql.push_str(&format!(
                "DROP DATABASE IF EXISTS `{db}`;\nCREATE DATABASE `{db}`;\n"
            ));
        }
        ctx.host.runner.run(&mariadb::script(
            format!("emptying the databases of {}", self.step),
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

    fn host(tables: &'static str) -> (tempfile::TempDir, Host, Arc<RecordingRunner>) {
        let dir = tempfile::tempdir().unwrap();
        let runner = Arc::new(RecordingRunner::answering(move |c| {
            if c.description.starts_with("counting") {
                CmdOutput::ok(tables)
            } else {
                CmdOutput::ok("")
            }
        }));
        let host = Host::with_runner(dir.path(), runner.clone(), false);
        (dir, host, runner)
    }

    fn stdin_of(runner: &RecordingRunner) -> Vec<String> {
        runner
            .calls()
            .iter()
            .filter_map(|c| c.stdin.as_ref().map(|s| s.expose().to_string()))
            .collect()
    }

    #[test]
    fn a_sync_cut_on_empty_databases_starts_again_from_empty_ones() {
        let (_dir, host, runner) = host("0\n");
        let journal = Journal::default();
        let ctx = Context {
            host: &host,
            journal: &journal,
        };
        let sync = SchemaSync::new(
            "nova.db-sync".into(),
            vec!["nova".into(), "nova_cell0".into()],
        );
        assert_eq!(sync.interrupted(&ctx).unwrap(), None);
        sync.begin(&ctx).unwrap();
        assert!(
            stdin_of(&runner).is_empty(),
            "nothing dropped on the first run"
        );
        // The power went: the record is there on the next run.
        assert_eq!(sync.interrupted(&ctx).unwrap(), Some(Started::OnEmpty));
        sync.begin(&ctx).unwrap();
        assert_eq!(
            stdin_of(&runner),
            [
                "DROP DATABASE IF EXISTS `nova`;\nCREATE DATABASE `nova`;\nDROP DATABASE IF EXISTS `nova_cell0`;\nCREATE DATABASE `nova_cell0`;\n"
            ]
        );
        sync.end(&ctx).unwrap();
        assert_eq!(sync.interrupted(&ctx).unwrap(), None);
    }

    #[test]
    fn a_sync_cut_on_a_schema_runs_again_and_drops_nothing() {
        let (_dir, host, runner) = host("42\n");
        let journal = Journal::default();
        let ctx = Context {
            host: &host,
            journal: &journal,
        };
        let sync = SchemaSync::new("keystone.db-sync".into(), vec!["keystone".into()]);
        sync.begin(&ctx).unwrap();
        assert_eq!(sync.interrupted(&ctx).unwrap(), Some(Started::OnSchema));
        sync.begin(&ctx).unwrap();
        assert!(stdin_of(&runner).is_empty(), "a schema is never dropped");
        sync.end(&ctx).unwrap();
        assert_eq!(sync.interrupted(&ctx).unwrap(), None);
    }
}
