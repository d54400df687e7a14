//! RabbitMQ through `rabbitmqctl` on the control plane: a node's own user
//! with the permissions its recipe gives (its own queues only), made with
//! others that arrive at the same time in one call, and its removal with
//! the connections it still has.

use crate::host::{Cmd, Host};
use crate::recipes::site_credentials::RabbitPermissions;
use crate::secrets::Secret;
use anyhow::{Result, bail};
use serde_json::json;

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

/// A RabbitMQ user as dcn makes it: its password and its permissions on
/// `/`.
pub struct RabbitUser {
    pub name: String,
    pub password: Secret,
    pub permissions: RabbitPermissions,
}

/// Create `users` or give existing ones these passwords and permissions
/// (their old passwords stop working), all in one `rabbitmqctl
/// import_definitions` read from stdin: one Erlang VM started, not four
/// per user. The definitions carry salted password hashes, never the
/// passwords; they are secret all the same and go only to stdin.
pub fn ensure_users(host: &Host, users: &[RabbitUser]) -> Result<()> {
    if users.is_empty() {
        return Ok(());
    }
    let names: Vec<&str> = users.iter().map(|u| u.name.as_str()).collect();
    let definitions = definitions(users, &mut |salt| {
        getrandom::fill(salt).expect("the OS random number generator failed")
    });
    let out = rabbitmqctl(
        host,
        &format!("creating or updating RabbitMQ user(s) {}", names.join(", ")),
        &["import_definitions", "--format", "json"],
        Some(&definitions),
    )?;
    if !out.success() {
        bail!(
            "creating or updating RabbitMQ user(s) {} failed: {}",
            names.join(", "),
            crate::terminal_text::cut(out.stderr.trim(), 500)
        );
    }
    Ok(())
}

/// [`ensure_users`] for one user.
pub fn ensure_user(
    host: &Host,
    user: &str,
    password: &Secret,
    perms: &RabbitPermissions,
) -> Result<()> {
    ensure_users(
        host,
        &[RabbitUser {
            name: user.into(),
            password: password.clone(),
            permissions: perms.clone(),
        }],
    )
}

/// RabbitMQ's definitions (the format of `export_definitions`) of
/// `users`: each with its password hash, its permissions on `/` and its
/// topic permissions. `salt` fills each hash's 4 random bytes.
fn definitions(users: &[RabbitUser], salt: &mut dyn FnMut(&mut [u8; 4])) -> Secret {
    let mut accounts = Vec::new();
    let mut permissions = Vec::new();
    let mut topic_permissions = Vec::new();
    for u in users {
        accounts.push(json!({
            "name": u.name,
            "password_hash": password_hash(&u.password, salt),
            "hashing_algorithm": "rabbit_password_hashing_sha256",
            "tags": "",
        }));
        let p = &u.permissions;
        permissions.push(json!({"user": u.name, "vhost": "/",
            "configure": p.configure, "write": p.write, "read": p.read}));
        if let Some((exchange, write, read)) = &p.topic {
            topic_permissions.push(json!({"user": u.name, "vhost": "/",
                "exchange": exchange, "write": write, "read": read}));
        }
    }
    Secret::new(
        json!({"users": accounts, "permissions": permissions,
               "topic_permissions": topic_permissions})
        .to_string(),
    )
}

/// RabbitMQ's `rabbit_password_hashing_sha256`: base64 of a 4-byte salt
/// followed by SHA-256 of the salt and the password.
fn password_hash(password: &Secret, salt: &mut dyn FnMut(&mut [u8; 4])) -> String {
    use base64::Engine;
    use sha2::Digest;
    let mut s = [0u8; 4];
    salt(&mut s);
    let mut hasher = sha2::Sha256::new();
    hasher.update(s);
    hasher.update(password.expose().as_bytes());
    let mut out = s.to_vec();
    out.extend_from_slice(&hasher.finalize());
    base64::engine::general_purpose::STANDARD.encode(out)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn user(name: &str, topic: bool) -> RabbitUser {
        RabbitUser {
            name: name.into(),
            password: Secret::new("s3cret-pw"),
            permissions: RabbitPermissions {
                configure: "^(nova)$".into(),
                write: "^(nova|amq\\.default)$".into(),
                read: "^(nova)$".into(),
                topic: topic.then(|| ("nova".into(), ".*".into(), "^(compute)$".into())),
            },
        }
    }

    #[test]
    fn definitions_hold_each_users_hash_and_permissions_and_never_the_password() {
        let mut n = 0u8;
        let defs = definitions(
            &[user("dcn-node-a", true), user("dcn-node-b", false)],
            &mut |s| {
                n += 1;
                *s = [n, 2, 3, 4];
            },
        );
        assert!(!defs.expose().contains("s3cret-pw"));
        let v: serde_json::Value = serde_json::from_str(defs.expose()).unwrap();
        assert_eq!(v["users"].as_array().unwrap().len(), 2);
        assert_eq!(v["users"][1]["name"], "dcn-node-b");
        assert_eq!(
            v["users"][0]["hashing_algorithm"],
            "rabbit_password_hashing_sha256"
        );
        assert_eq!(v["permissions"][0]["write"], "^(nova|amq\\.default)$");
        assert_eq!(v["permissions"][1]["vhost"], "/");
        // Only the user with topic permissions has them.
        let topics = v["topic_permissions"].as_array().unwrap();
        assert_eq!(topics.len(), 1);
        assert_eq!(topics[0]["user"], "dcn-node-a");
        assert_eq!(topics[0]["read"], "^(compute)$");
    }

    #[test]
    fn a_password_hash_is_the_salt_then_sha256_of_salt_and_password() {
        use base64::Engine;
        use sha2::Digest;
        let h = password_hash(&Secret::new("pw"), &mut |s| *s = [0xde, 0xad, 0xbe, 0xef]);
        let raw = base64::engine::general_purpose::STANDARD.decode(h).unwrap();
        assert_eq!(raw.len(), 36);
        assert_eq!(raw[..4], [0xde, 0xad, 0xbe, 0xef]);
        let want = sha2::Sha256::digest([&raw[..4], b"pw"].concat());
        assert_eq!(raw[4..], want[..]);
    }
}
