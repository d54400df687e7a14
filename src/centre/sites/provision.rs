//! What sites and nodes are on the control plane: a nova host aggregate
//! per site, whose availability zone is the site's name, and the RabbitMQ
//! and keystone users a node's site credentials are ([`super::accounts`]).

use crate::deploy::service::mariadb;
use crate::host::{Cmd, Host};
use crate::openstack::{Cloud, Credentials, identity};
use crate::passwords::PasswordStore;
use crate::recipes::site_credentials::RabbitPermissions;
use crate::secrets::Secret;
use anyhow::{Context, Result, bail};
use reqwest::Method;
use serde_json::json;

/// The admin on this control plane, through the loopback endpoints.
pub fn admin_cloud(host: &Host, region: &str) -> Result<Cloud> {
    let passwords = PasswordStore::load(&host.files)?;
    Cloud::login(
        &Credentials {
            auth_url: "http://127.0.0.1:5000/v3".into(),
            username: "admin".into(),
            password: passwords.get("keystone_admin")?.clone(),
            project: "admin".into(),
            region: region.into(),
            interface: "internal".into(),
        },
        None,
    )
    .context("logging in to the control plane as admin (is `dcn standalone init` finished?)")
}

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
pub fn ensure_rabbit_account(
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
pub fn remove_rabbit_account(host: &Host, user: &str) -> Result<()> {
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

/// Create or update a node's keystone user in the `service` project with
/// the `service` role only: not `admin`, which under Zed's policies is
/// admin of the whole cloud. What nova-compute does with it (report to
/// placement, bind ports, read the networks of its guests) the `service`
/// role may do through the policy drop-ins of the placement and neutron
/// recipes (docs/security.md). A user an older dcn made keeps no `admin`.
pub fn ensure_keystone_account(cloud: &Cloud, user: &str, password: &Secret) -> Result<()> {
    let project = identity::ensure_project(cloud, "service", "OpenStack services")?;
    let user = identity::ensure_user(cloud, user, password, &project)?;
    let service = identity::ensure_role(cloud, "service")?;
    identity::grant(cloud, &project, &user, &service)?;
    let admin = identity::ensure_role(cloud, "admin")?;
    identity::revoke(cloud, &project, &user, &admin)
}

/// Delete a keystone user, if it exists; keystone then refuses its tokens.
pub fn remove_keystone_account(cloud: &Cloud, user: &str) -> Result<()> {
    let v = cloud.get("identity", &format!("/users?name={user}&domain_id=default"))?;
    if let Some(id) = v["users"]
        .as_array()
        .and_then(|a| a.first())
        .and_then(|u| u["id"].as_str())
    {
        cloud.request(Method::DELETE, "identity", &format!("/users/{id}"), None)?;
    }
    Ok(())
}

/// A node's MariaDB user, `'user'@'%'` over TLS only, with every privilege
/// on each of `databases`, or its password set anew (the SQL and the
/// password reach mysql on stdin only).
pub fn ensure_database_account(
    host: &Host,
    user: &str,
    password: &Secret,
    databases: &[String],
) -> Result<()> {
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
pub fn remove_database_account(host: &Host, user: &str) -> Result<()> {
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

/// Whether nova has a compute service on `host` (up or down).
pub fn is_compute_host(cloud: &Cloud, host: &str) -> Result<bool> {
    let v = cloud.get(
        "compute",
        &format!("/os-services?binary=nova-compute&host={host}"),
    )?;
    Ok(v["services"].as_array().is_some_and(|a| !a.is_empty()))
}

/// The site's host aggregate (availability zone = site); returns its id.
pub fn ensure_aggregate(cloud: &Cloud, site: &str) -> Result<u64> {
    let v = cloud.get("compute", "/os-aggregates")?;
    if let Some(a) = v["aggregates"]
        .as_array()
        .and_then(|a| a.iter().find(|a| a["name"] == site))
    {
        if a["availability_zone"] != site {
            bail!(
                "host aggregate {site} exists with availability zone {}; dcn uses the site name as the zone: rename or remove that aggregate",
                a["availability_zone"]
            );
        }
        return a["id"].as_u64().context("an aggregate without an id");
    }
    let v = cloud.post(
        "compute",
        "/os-aggregates",
        &json!({"aggregate": {"name": site, "availability_zone": site}}),
    )?;
    v["aggregate"]["id"]
        .as_u64()
        .context("nova created an aggregate without an id")
}

/// Add a compute host to the site's aggregate (idempotent).
pub fn add_to_aggregate(cloud: &Cloud, aggregate: u64, host: &str) -> Result<()> {
    let v = cloud.get("compute", &format!("/os-aggregates/{aggregate}"))?;
    let present = v["aggregate"]["hosts"]
        .as_array()
        .is_some_and(|h| h.iter().any(|x| x == host));
    if !present {
        cloud.post(
            "compute",
            &format!("/os-aggregates/{aggregate}/action"),
            &json!({"add_host": {"host": host}}),
        )?;
    }
    Ok(())
}

/// Remove a compute host from an aggregate (idempotent).
pub fn remove_from_aggregate(cloud: &Cloud, aggregate: u64, host: &str) -> Result<()> {
    let v = cloud.get("compute", &format!("/os-aggregates/{aggregate}"))?;
    let present = v["aggregate"]["hosts"]
        .as_array()
        .is_some_and(|h| h.iter().any(|x| x == host));
    if present {
        cloud.post(
            "compute",
            &format!("/os-aggregates/{aggregate}/action"),
            &json!({"remove_host": {"host": host}}),
        )?;
    }
    Ok(())
}
