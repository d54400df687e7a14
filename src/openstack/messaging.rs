//! RabbitMQ through `rabbitmqctl` on the control plane: a node's own user
//! with the permissions its recipe gives (its own queues only), and its
//! removal with the connections it still has.

use crate::host::{Cmd, Host};
use crate::recipes::site_credentials::RabbitPermissions;
use crate::secrets::Secret;
use anyhow::{Result, bail};

fn rabbitmqctl(
    host: &Host,
    what: &str,
    args: &[&str],
    stdin: Option<&Secret>,
) -> Result<crate::host::CmdOutput> {
    let mut c = Cmd::new(what, "rabbitmqctl")
        .args(args.iter().copied())
        .unchecked();
    if let Some(s) = stdin {
        c = c.stdin(s.clone());
    }
    host.runner.run(&c)
}

/// Create a RabbitMQ user or set its password (on stdin: without a password
/// argument rabbitmqctl reads it there), with `perms` on `/`.
pub fn ensure_user(
    host: &Host,
    user: &str,
    password: &Secret,
    perms: &RabbitPermissions,
) -> Result<()> {
    let users = rabbitmqctl(
        host,
        "listing RabbitMQ users",
        &["list_users", "--quiet", "--no-table-headers"],
        None,
    )?;
    let exists = users
        .stdout
        .lines()
        .any(|l| l.split_whitespace().next() == Some(user));
    let (what, args): (String, Vec<&str>) = if exists {
        (
            format!("setting the password of RabbitMQ user {user}"),
            vec!["change_password", user],
        )
    } else {
        (
            format!("creating RabbitMQ user {user}"),
            vec!["add_user", user],
        )
    };
    let out = rabbitmqctl(host, &what, &args, Some(password))?;
    if !out.success() {
        bail!("{what} failed: {}", out.stderr.trim());
    }
    let out = rabbitmqctl(
        host,
        "granting RabbitMQ permissions",
        &[
            "set_permissions",
            "-p",
            "/",
            user,
            &perms.configure,
            &perms.write,
            &perms.read,
        ],
        None,
    )?;
    if !out.success() {
        bail!(
            "granting permissions to RabbitMQ user {user} failed: {}",
            out.stderr.trim()
        );
    }
    if let Some((exchange, write, read)) = &perms.topic {
        let out = rabbitmqctl(
            host,
            "granting RabbitMQ topic permissions",
            &[
                "set_topic_permissions",
                "-p",
                "/",
                user,
                exchange,
                write,
                read,
            ],
            None,
        )?;
        if !out.success() {
            bail!(
                "granting topic permissions on {exchange} to RabbitMQ user {user} failed: {}",
                out.stderr.trim()
            );
        }
    }
    Ok(())
}

/// Remove a RabbitMQ user and close the connections it still has open
/// (deleting a user does not end them on every RabbitMQ version).
pub fn remove_user(host: &Host, user: &str) -> Result<()> {
    let out = rabbitmqctl(
        host,
        &format!("removing RabbitMQ user {user}"),
        &["delete_user", user],
        None,
    )?;
    if !out.success()
        && !out.stderr.contains("does not exist")
        && !out.stdout.contains("does not exist")
    {
        bail!(
            "removing RabbitMQ user {user} failed: {}",
            out.stderr.trim()
        );
    }
    let conns = rabbitmqctl(
        host,
        "listing RabbitMQ connections",
        &[
            "list_connections",
            "--quiet",
            "--no-table-headers",
            "user",
            "pid",
        ],
        None,
    )?;
    for line in conns.stdout.lines() {
        let mut cols = line.split_whitespace();
        if cols.next() != Some(user) {
            continue;
        }
        if let Some(pid) = cols.next() {
            // A connection that closed meanwhile is not an error.
            rabbitmqctl(
                host,
                &format!("closing a connection of RabbitMQ user {user}"),
                &["close_connection", pid, "dcn: the node was removed"],
                None,
            )?;
        }
    }
    Ok(())
}
