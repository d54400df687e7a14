//! A recipe's setup commands (schema syncs, cell mappings): rendered, run as
//! the recipe's user with passwords in the environment, retried as it allows.

use crate::deploy::digest;
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
        Ok(Some(Setup {
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

    fn command(&self) -> Cmd {
        let (program, args): (String, Vec<String>) = match &self.user {
            // runuser, not su: su goes through pam_systemd and leaves a user
            // manager behind.
            Some(u) => (
                "runuser".into(),
                ["-u".to_string(), u.clone(), "--".into()]
                    .into_iter()
                    .chain(self.argv.iter().cloned())
                    .collect(),
            ),
            None => (self.argv[0].clone(), self.argv[1..].to_vec()),
        };
        let mut cmd = Cmd::new(format!("{} setup: {}", self.service, self.name), program)
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

    fn apply(&self, ctx: &Context) -> Result<()> {
        let cmd = self.command();
        for attempt in 1..=self.attempts {
            let out = ctx.host.runner.run(&cmd)?;
            let code = out.code.unwrap_or(-1);
            if code == 0 || self.ok_codes.contains(&code) {
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
