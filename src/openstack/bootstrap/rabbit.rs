//! RabbitMQ's users on the control plane: no `guest`, one `openstack`
//! user for the control plane's services (nodes get their own,
//! [`crate::openstack::messaging`]).

use crate::engine::digest;
use crate::engine::{Context, Step};
use crate::host::Cmd;
use crate::secrets::Secret;
use anyhow::Result;

/// RabbitMQ: no guest, a user for the control plane (password on stdin).
pub struct RabbitUsers {
    pub password: Secret,
}

impl Step for RabbitUsers {
    fn name(&self) -> String {
        "rabbitmq.users".into()
    }
    fn describe(&self) -> String {
        "remove RabbitMQ's guest user and create the control plane's".into()
    }
    fn fingerprint(&self) -> String {
        digest([self.password.expose().as_bytes()])
    }
    /// RabbitMQ has the control plane's user with every permission and no
    /// guest (and the user last got this password).
    fn is_done(&self, ctx: &Context) -> Result<bool> {
        if !ctx.journal.is_done(&self.name(), &self.fingerprint()) {
            return Ok(false);
        }
        let out = ctx.host.runner.run(
            &Cmd::new("checking RabbitMQ's users", "rabbitmqctl")
                .args([
                    "list_permissions",
                    "-p",
                    "/",
                    "--quiet",
                    "--no-table-headers",
                ])
                .read_only()
                .unchecked(),
        )?;
        Ok(out.success() && rabbit_users_done(&out.stdout))
    }
    fn apply(&self, ctx: &Context) -> Result<()> {
        ctx.host.runner.run(
            &Cmd::new("removing RabbitMQ's guest user", "rabbitmqctl")
                .args(["delete_user", "guest"])
                .unchecked(),
        )?;
        crate::openstack::messaging::ensure_user(
            ctx.host,
            "openstack",
            &self.password,
            &crate::recipes::site_credentials::RabbitPermissions::all(),
        )
    }
}

/// `rabbitmqctl list_permissions` output: `openstack` may do everything
/// on `/`, and `guest` is gone.
fn rabbit_users_done(permissions: &str) -> bool {
    let rows: Vec<Vec<&str>> = permissions
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    rows.iter()
        .any(|r| r.as_slice() == ["openstack", ".*", ".*", ".*"])
        && !rows.iter().any(|r| r.first() == Some(&"guest"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rabbitmq_is_done_with_the_control_planes_user_and_no_guest() {
        assert!(rabbit_users_done(
            "openstack\t.*\t.*\t.*\ndcn-node-e1\t^(nova)$\t^(nova)$\t^(nova)$\n"
        ));
        assert!(!rabbit_users_done(
            "guest\t.*\t.*\t.*\nopenstack\t.*\t.*\t.*\n"
        ));
        assert!(!rabbit_users_done("openstack\t\t.*\t.*\n"));
        assert!(!rabbit_users_done(""));
    }
}
