//! How a service's certificates are issued and renewed, and what of it a
//! control-plane backup keeps.

use super::root;
use serde::Deserialize;

/// A leaf certificate of the dcn CA (or, for hosts that join, the node's
/// own), with the CA certificate, installed where a service reads it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CertificateRecipe {
    /// The leaf: `api`, `rabbitmq`, `ovn-sb`, `join`, or `node`.
    pub leaf: String,
    pub cert: String,
    pub key: String,
    pub ca: String,
    #[serde(default = "root")]
    pub owner: String,
    #[serde(default = "root")]
    pub group: String,
    #[serde(default)]
    pub when_role: Option<String>,
    /// What the service needs to use a renewed certificate (or a new CA
    /// file): every certificate says, so renewal never guesses.
    pub on_renew: OnRenew,
}

/// One part of a control-plane backup: a dump made by a command and loaded
/// back by another, or files kept as they are (with their modes and
/// owners). Dumps are made of services of the infrastructure phase, which
/// `dcn restore` has running before it loads them.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct BackupRecipe {
    /// The part's name: its member in the archive and its line in reports.
    pub name: String,
    /// A command whose stdout is the dump. An argument that is exactly
    /// `{{ databases }}` stands for every database the recipes of the host
    /// declare, one argument each.
    #[serde(default)]
    pub dump: Option<Vec<String>>,
    /// The command that loads the dump from its stdin.
    #[serde(default)]
    pub restore: Option<Vec<String>>,
    /// Files and directories kept as they are.
    #[serde(default)]
    pub paths: Vec<String>,
    /// Only with `dcn backup --with-images`.
    #[serde(default)]
    pub only_with_images: bool,
}

impl BackupRecipe {
    /// A dump with its restore, or paths.
    pub fn check(&self) -> Result<(), String> {
        match (&self.dump, &self.restore, self.paths.is_empty()) {
            (Some(d), Some(r), true) if !d.is_empty() && !r.is_empty() => Ok(()),
            (None, None, false) if self.paths.iter().all(|p| p.starts_with('/')) => Ok(()),
            (None, None, false) => Err("its paths must be absolute".into()),
            _ => Err("a backup part is either `dump` with `restore` (commands), or `paths`".into()),
        }
    }
}

/// How a service takes up a renewed certificate without dropping what it
/// serves: exactly one of these.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct OnRenew {
    /// `systemctl try-reload-or-restart` of this unit (a reload that keeps
    /// open connections, such as haproxy's).
    #[serde(default)]
    pub reload: Option<String>,
    /// Run this command…
    #[serde(default)]
    pub run: Option<Vec<String>>,
    /// …which this says, in reports (`replaced in the running haproxy`).
    #[serde(default)]
    pub says: Option<String>,
    /// The service reads its certificate files again by itself when they
    /// change (for its next connections).
    #[serde(default)]
    pub rereads: bool,
}

impl OnRenew {
    /// Exactly one way is given.
    pub fn check(&self) -> Result<(), String> {
        let given = [self.reload.is_some(), self.run.is_some(), self.rereads];
        if self.run.is_some() != self.says.is_some() {
            return Err(
                "onRenew's run and says go together: the command, and what it does in a few words"
                    .into(),
            );
        }
        match given.iter().filter(|g| **g).count() {
            1 => Ok(()),
            0 => Err("onRenew must say how the service takes up a renewed certificate: reload, run or rereads: true".into()),
            _ => Err("onRenew must give one of reload, run and rereads, not several".into()),
        }
    }
}
