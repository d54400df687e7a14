//! A recipe's setup commands (schema syncs, cell mappings): rendered, run as
//! the recipe's user with passwords in the environment, retried as it allows.

use super::schema_sync::SchemaSync;
use crate::engine::digest;
use crate::engine::{Context, Step};
use crate::host::Cmd;
use crate::recipes::{SetupCommand, Values, render_str};
use crate::secrets::Secret;
use anyhow::{Context as _, Result, bail};
use std::time::Duration;

/// A setup command from a recipe.
pub struct Setup {
    service: String,
    name: String,
    argv: Vec<String>,
    user: Option<String>,
    secret_env: Vec<(String, Secret)>,
    timeout: Duration,
    ok_codes: Vec<i32>,
    attempts: u32,
    /// How a run tells the effect is there; none: it runs every time.
    check: Option<Check>,
    /// The databases' schema it syncs, when it is a schema sync.
    schema: Option<SchemaSync>,
    /// The service's packages: a schema sync runs again once one of them
    /// (or what they depend on) was unpacked after it last ran, since the
    /// new code may bring migrations.
    packages: Vec<String>,
}

/// How a setup command's effect is checked.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Check {
    /// This command (as root) succeeds.
    Command(Vec<String>),
    /// This query (to MariaDB, as root) returns a row.
    Sql(String),
}

impl Check {
    fn command(&self, what: String) -> Cmd {
        match self {
            Check::Command(argv) => Cmd::new(what, argv[0].clone()).args(argv[1..].iter().cloned()),
            Check::Sql(query) => crate::openstack::mariadb::query(what, query),
        }
        .timeout(Duration::from_secs(120))
        .read_only()
        .unchecked()
    }

    fn passed(&self, out: &crate::host::CmdOutput) -> bool {
        out.success()
            && match self {
                Check::Command(_) => true,
                Check::Sql(_) => !out.stdout.trim().is_empty(),
            }
    }
}

impl Setup {
    /// The step, or `None` when the command is for another role.
    pub fn new(service: &str, cmd: &SetupCommand, values: &Values) -> Result<Option<Setup>> {
        if let Some(role) = &cmd.when_role
            && !values.roles.contains(role)
        {
            return Ok(None);
        }
        let argv = cmd
            .run
            .iter()
            .map(|a| render_str(a, values))
            .collect::<Result<Vec<_>>>()
            .with_context(|| format!("rendering setup command {} of {service}", cmd.name))?;
        if argv.iter().any(|a| values.contains_secret(a)) {
            bail!(
                "recipe bug: setup command {} of {service} would put a password in argv; use secretEnv",
                cmd.name
            );
        }
        let secret_env = cmd
            .secret_env
            .iter()
            .map(|(var, pw)| {
                let value = values.password.get(pw).with_context(|| {
                    format!(
                        "setup command {} of {service} needs password {pw}",
                        cmd.name
                    )
                })?;
                Ok((var.clone(), Secret::new(value.clone())))
            })
            .collect::<Result<Vec<_>>>()?;
        let render = |args: &[String]| {
            args.iter()
                .map(|a| render_str(a, values))
                .collect::<Result<Vec<_>>>()
                .with_context(|| {
                    format!(
                        "rendering the check of setup command {} of {service}",
                        cmd.name
                    )
                })
        };
        let check = match (&cmd.check, &cmd.check_sql) {
            (Some(argv), _) if !argv.is_empty() => Some(Check::Command(render(argv)?)),
            (Some(_), _) => bail!(
                "recipe bug: the check of setup command {} of {service} is empty",
                cmd.name
            ),
            (None, Some(q)) => Some(Check::Sql(render(std::slice::from_ref(q))?.remove(0))),
            (None, None) => None,
        };
        let rendered: Vec<&String> = match &check {
            Some(Check::Command(argv)) => argv.iter().collect(),
            Some(Check::Sql(q)) => vec![q],
            None => vec![],
        };
        if rendered.iter().any(|a| values.contains_secret(a)) {
            bail!(
                "recipe bug: the check of setup command {} of {service} would put a password in argv",
                cmd.name
            );
        }
        let schema = (!cmd.schema.is_empty())
            .then(|| SchemaSync::new(format!("{service}.{}", cmd.name), cmd.schema.clone()));
        Ok(Some(Setup {
            check,
            schema,
            packages: Vec::new(),
            service: service.into(),
            name: cmd.name.clone(),
            argv,
            user: cmd.user.clone(),
            secret_env,
            timeout: Duration::from_secs(cmd.timeout),
            ok_codes: cmd.ok_codes.clone(),
            attempts: cmd.attempts.max(1),
        }))
    }

    /// The step for a service whose code comes from `packages`.
    pub fn of_packages(mut self, packages: &[String]) -> Setup {
        self.packages = packages.to_vec();
        self
    }

    /// Packages of the service dpkg unpacked after this schema sync last
    /// finished (none for other commands, or when the journal does not
    /// know when it ran).
    fn installed_since_sync(&self, ctx: &Context) -> Result<Vec<String>> {
        let (Some(_), Some(finished)) = (&self.schema, ctx.journal.finished_at(&self.name()))
        else {
            return Ok(Vec::new());
        };
        if self.packages.is_empty() {
            return Ok(Vec::new());
        }
        let installed = crate::host::apt::InstalledSet::read(&ctx.host.files)?;
        let closure = installed.closure(self.packages.iter().map(String::as_str));
        installed.unpacked_since(&ctx.host.files, &closure, finished)
    }

    fn command(&self) -> Cmd {
        self.as_user(format!("{} setup: {}", self.service, self.name), &self.argv)
    }

    /// `argv` as the recipe's user, with its secret environment.
    fn as_user(&self, description: String, argv: &[String]) -> Cmd {
        let (program, args): (String, Vec<String>) = match &self.user {
            // runuser, not su: su goes through pam_systemd and leaves a user
            // manager behind.
            Some(u) => (
                "runuser".into(),
                ["-u".to_string(), u.clone(), "--".into()]
                    .into_iter()
                    .chain(argv.iter().cloned())
                    .collect(),
            ),
            None => (argv[0].clone(), argv[1..].to_vec()),
        };
        let mut cmd = Cmd::new(description, program)
            .args(args)
            .timeout(self.timeout)
            .unchecked();
        for (k, v) in &self.secret_env {
            cmd = cmd.secret_env(k.clone(), v.clone());
        }
        cmd
    }
}

impl Step for Setup {
    fn name(&self) -> String {
        format!("{}.{}", self.service, self.name)
    }

    fn describe(&self) -> String {
        format!("{}: {}", self.service, self.argv.join(" "))
    }

    fn fingerprint(&self) -> String {
        digest(self.argv.iter().map(|a| a.as_bytes()))
    }

    fn reapplies(&self) -> bool {
        self.check.is_none()
    }

    /// A `rerun` command is never done. A checked one is done when its
    /// check passes, unless the journal shows it last ran as another
    /// command (its configuration changed) or it is a schema sync that
    /// started and never ended, or one that ran before its service's
    /// packages last changed (an upgrade).
    fn is_done(&self, ctx: &Context) -> Result<bool> {
        let Some(check) = &self.check else {
            return Ok(false);
        };
        if let Some(sync) = &self.schema
            && sync.interrupted(ctx)?.is_some()
        {
            return Ok(false);
        }
        let name = self.name();
        if ctx.journal.has_run(&name) && !ctx.journal.is_done(&name, &self.fingerprint()) {
            return Ok(false);
        }
        let out = (ctx.host.runner)
            .run(&check.command(format!("checking {} setup: {}", self.service, self.name)))?;
        Ok(check.passed(&out) && self.installed_since_sync(ctx)?.is_empty())
    }

    fn apply(&self, ctx: &Context) -> Result<()> {
        if let Some(sync) = &self.schema {
            let newer = self.installed_since_sync(ctx)?;
            if !newer.is_empty() {
                tracing::info!(
                    "    {} setup: {} again: {} installed since it last ran",
                    self.service,
                    self.name,
                    crate::host::apt::installed::few(&newer)
                );
            }
            sync.begin(ctx)?;
        }
        let cmd = self.command();
        for attempt in 1..=self.attempts {
            let out = ctx.host.runner.run(&cmd)?;
            let code = out.code.unwrap_or(-1);
            if code == 0 || self.ok_codes.contains(&code) {
                if let Some(sync) = &self.schema {
                    sync.end(ctx)?;
                }
                return Ok(());
            }
            if attempt == self.attempts {
                let checked = Cmd {
                    check: true,
                    ..cmd.clone()
                };
                crate::host::command::check_output(&checked, out)?;
            }
            std::thread::sleep(Duration::from_secs(1));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Journal;
    use crate::host::{CmdOutput, Host, RecordingRunner};
    use std::sync::Arc;

    fn command(yaml: &str) -> SetupCommand {
        serde_yaml::from_str(yaml).unwrap()
    }

    /// A host whose checks (mysql, or `test`) answer `present`.
    fn host(present: bool) -> (tempfile::TempDir, Host, Arc<RecordingRunner>) {
        let dir = tempfile::tempdir().unwrap();
        let runner = Arc::new(RecordingRunner::answering(move |c| {
            match (c.program.as_str(), present) {
                ("mysql", true) => CmdOutput::ok("1\n"),
                ("mysql", false) => CmdOutput::ok(""),
                ("test", true) => CmdOutput::ok(""),
                ("test", false) => CmdOutput::failed(1, ""),
                _ => CmdOutput::ok(""),
            }
        }));
        let host = Host::with_runner(dir.path(), runner.clone(), false);
        (dir, host, runner)
    }

    fn done(step: &Setup, journal: &Journal, present: bool) -> bool {
        let (_dir, host, _) = host(present);
        step.is_done(&Context {
            host: &host,
            journal,
        })
        .unwrap()
    }

    #[test]
    fn a_checked_command_is_done_only_while_its_effect_is_there() {
        let values = Values::default();
        let step = Setup::new(
            "nova",
            &command("{name: map-cell0, run: [nova-manage, cell_v2, map_cell0], user: nova, checkSql: \"SELECT 1 FROM nova_api.cell_mappings WHERE name = 'cell0'\"}"),
            &values,
        )
        .unwrap()
        .unwrap();
        let mut journal = Journal::default();
        journal.record_step(&step.name(), &step.fingerprint(), Duration::ZERO);
        assert!(done(&step, &journal, true));
        // The journal says done; MariaDB says the mapping is gone.
        assert!(!done(&step, &journal, false));
        // Never run here, but its effect is there (an earlier install).
        assert!(done(&step, &Journal::default(), true));
        // It last ran as another command: it runs again.
        let mut changed = Journal::default();
        changed.record_step(&step.name(), "another fingerprint", Duration::ZERO);
        assert!(!done(&step, &changed, true));

        let (_dir, host, runner) = host(false);
        let file = Setup::new(
            "keystone",
            &command("{name: fernet-setup, run: [keystone-manage, fernet_setup], check: [test, -s, /etc/keystone/fernet-keys/0]}"),
            &values,
        )
        .unwrap()
        .unwrap();
        assert!(
            !file
                .is_done(&Context {
                    host: &host,
                    journal: &journal
                })
                .unwrap()
        );
        let checked = runner.calls().pop().unwrap();
        assert_eq!(
            checked.command_line(),
            "test -s /etc/keystone/fernet-keys/0"
        );
        assert!(checked.read_only, "a check runs in dry runs too");
    }

    #[test]
    fn a_schema_sync_runs_again_once_its_services_packages_were_unpacked_after_it() {
        let step = Setup::new(
            "keystone",
            &command("{name: db-sync, run: [keystone-manage, db_sync], schema: [keystone], checkSql: \"SELECT 1\"}"),
            &Values::default(),
        )
        .unwrap()
        .unwrap()
        .of_packages(&["keystone".to_string()]);
        let (dir, host, _) = host(true);
        let mut journal = Journal::default();
        journal.record_step(&step.name(), &step.fingerprint(), Duration::ZERO);
        let info = dir.path().join("var/lib/dpkg/info");
        std::fs::create_dir_all(&info).unwrap();
        std::fs::write(
            dir.path().join("var/lib/dpkg/status"),
            "Package: keystone\nStatus: install ok installed\nArchitecture: all\nVersion: 2:22.0.0-2\nDepends: python3-keystone\n\n\
             Package: python3-keystone\nStatus: install ok installed\nArchitecture: all\nVersion: 2:22.0.0-2\n",
        )
        .unwrap();
        let list = |name: &str, at: std::time::SystemTime| {
            let f = std::fs::File::create(info.join(name)).unwrap();
            f.set_modified(at).unwrap();
        };
        let hour_ago = std::time::SystemTime::now() - Duration::from_secs(3600);
        list("keystone.list", hour_ago);
        list("python3-keystone.list", hour_ago);
        let ctx = Context {
            host: &host,
            journal: &journal,
        };
        assert!(step.is_done(&ctx).unwrap(), "installed before the sync ran");
        // An upgrade unpacks the service's code after the sync.
        list(
            "python3-keystone.list",
            std::time::SystemTime::now() + Duration::from_secs(5),
        );
        assert!(
            !step.is_done(&ctx).unwrap(),
            "new code may bring migrations"
        );
    }

    #[test]
    fn a_schema_sync_that_started_and_never_ended_is_not_done_though_its_table_is_there() {
        let step = Setup::new(
            "neutron",
            &command("{name: db-upgrade, run: [neutron-db-manage, upgrade, head], user: neutron, schema: [neutron], checkSql: \"SELECT 1 FROM information_schema.tables WHERE table_schema = 'neutron' AND table_name = 'networks'\"}"),
            &Values::default(),
        )
        .unwrap()
        .unwrap();
        let (_dir, host, _) = host(true);
        let mut journal = Journal::default();
        journal.record_step(&step.name(), &step.fingerprint(), Duration::ZERO);
        let ctx = Context {
            host: &host,
            journal: &journal,
        };
        assert!(step.is_done(&ctx).unwrap());
        // A power cut in the middle of the sync leaves its record.
        host.files
            .write(
                "/var/lib/dcn/schema-syncs/neutron.db-upgrade",
                b"empty\n",
                &crate::host::FileSpec::secret(),
            )
            .unwrap();
        assert!(!step.is_done(&ctx).unwrap());
    }

    #[test]
    fn a_rerun_command_is_never_done() {
        let step = Setup::new(
            "ovn-controller",
            &command("{name: chassis, run: [ovs-vsctl, set, open, ., 'external-ids:ovn-remote=ssl:10.0.0.1:6642'], rerun: true}"),
            &Values::default(),
        )
        .unwrap()
        .unwrap();
        let mut journal = Journal::default();
        journal.record_step(&step.name(), &step.fingerprint(), Duration::ZERO);
        assert!(!done(&step, &journal, true));
    }
}
