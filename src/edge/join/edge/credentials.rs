//! The state the join keeps in `/var/lib/dcn/node/` (all 0600): the node's
//! key, made here and never sent, its certificate, and the site credentials
//! from the join reply (serialised from [`Credentials`]); and the join
//! request that produces them.

use crate::bundle::VerifiedBundle;
use crate::edge::join::client::JoinClient;
use crate::host::{FileSpec, Files, Host};
use crate::recipes::Recipes;
use crate::secrets::Secret;
use crate::wire::{JoinRequest, SiteCredential};
use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::net::IpAddr;
use std::time::Instant;

const NODE_DIR: &str = "/var/lib/dcn/node";
pub(crate) const NODE_KEY: &str = "/var/lib/dcn/node/node.key";
pub(crate) const NODE_CERT: &str = "/var/lib/dcn/node/node.crt";
pub(in crate::edge::join) const CREDENTIALS: &str = "/var/lib/dcn/node/credentials.yaml";
/// The bundle's manifest (no secret in it), kept so an upgrade renders
/// the node's services again without the bundle, which may be gone or
/// expired by then.
pub(crate) const MANIFEST: &str = "/var/lib/dcn/node/manifest.json";

/// Keep the manifest of the bundle this node joined with.
pub fn keep_manifest(files: &Files, manifest: &crate::bundle::Manifest) -> Result<()> {
    files.ensure_dir(NODE_DIR, &FileSpec::private_dir())?;
    let text = serde_json::to_string_pretty(manifest)? + "\n";
    files.write(MANIFEST, text.as_bytes(), &FileSpec::secret())?;
    Ok(())
}

/// The manifest this node joined with, if a dcn that keeps it joined it.
pub fn kept_manifest(files: &Files) -> Result<Option<crate::bundle::Manifest>> {
    match files.read_string(MANIFEST)? {
        None => Ok(None),
        Some(t) => serde_json::from_str(&t).map(Some).with_context(|| {
            format!("{MANIFEST} is damaged; run `dcn join` with the site's bundle again")
        }),
    }
}

/// What the join reply gave this node, kept for re-runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct Credentials {
    pub site: String,
    /// For the join service's node resources (status, config, progress).
    pub node_secret: Secret,
    /// The site credentials, by the names the recipes declare.
    pub credentials: BTreeMap<String, SiteCredential>,
}

/// The header of the stored file.
const HEADER: &str = "# dcn: this node's credentials from the join reply. Secret.\n";

impl Credentials {
    /// The credential `name`, which an edge recipe declares.
    pub fn get(&self, name: &str) -> Result<&SiteCredential> {
        self.credentials.get(name).with_context(|| {
            format!(
                "the join service gave no site credential {name}, which this dcn's recipes need; run the control plane's dcn version on this host, then join again"
            )
        })
    }

    /// Every credential this dcn's edge recipes declare is here, and is a
    /// user exactly when the recipe says so.
    fn check(&self, recipes: &Recipes) -> Result<()> {
        for (name, c) in recipes.site_credentials()? {
            if self.get(name)?.username.is_some() != c.is_account() {
                bail!(
                    "the join service's site credential {name} is not the kind this dcn's recipe {} declares; run the control plane's dcn version on this host, then join again",
                    c.service
                );
            }
        }
        Ok(())
    }

    /// What the join service would give `hostname` of `site` under
    /// `recipes`, with made-up passwords (`<name>-pw`).
    #[cfg(test)]
    pub(crate) fn sample(recipes: &Recipes, site: &str, hostname: &str) -> Self {
        let credentials = (recipes.site_credentials().unwrap().into_iter())
            .map(|(name, c)| {
                let username = c
                    .account(hostname)
                    .unwrap()
                    .map(|a| a.username().to_string());
                let password = Secret::new(format!("{name}-pw"));
                (name.to_string(), SiteCredential { username, password })
            })
            .collect();
        Credentials {
            site: site.into(),
            node_secret: Secret::new("node-pw"),
            credentials,
        }
    }

    fn to_yaml(&self) -> Result<String> {
        Ok(format!("{HEADER}{}", serde_yaml::to_string(self)?))
    }

    /// The credentials an earlier join kept; `None` when there are none,
    /// or when an older dcn kept them in its own layout (the join then
    /// asks again, with the node's key, and the control plane answers).
    pub(in crate::edge::join) fn load(files: &Files) -> Result<Option<Credentials>> {
        let Some(text) = files.read_secret(CREDENTIALS)? else {
            return Ok(None);
        };
        match serde_yaml::from_str(&text) {
            Ok(c) => Ok(Some(c)),
            Err(_) if text.contains("\nrabbitUser: ") => {
                tracing::info!(
                    "    {CREDENTIALS} was written by an older dcn; asking the join service again"
                );
                Ok(None)
            }
            // serde_yaml's message may quote the file: say where, not what.
            Err(_) => bail!("{CREDENTIALS} is damaged; remove it (and {NODE_CERT}) and join again"),
        }
    }
}

/// The credentials this host kept from joining its site before, when
/// they still hold all that `recipes` declare.
pub fn kept(recipes: &Recipes, files: &Files) -> Result<Option<Credentials>> {
    let Some(c) = Credentials::load(files)? else {
        return Ok(None);
    };
    if !files.exists(NODE_CERT)? {
        return Ok(None);
    }
    // A dcn whose recipes declare more than it was given (an upgrade that
    // added an edge service) asks again, with the same key.
    match c.check(recipes) {
        Ok(()) => {
            tracing::info!(
                "    this host joined site {} before; keeping its credentials",
                c.site
            );
            Ok(Some(c))
        }
        Err(e) => {
            tracing::info!("    asking the join service again: {e:#}");
            Ok(None)
        }
    }
}

/// Join the site, and keep what the reply carries.
pub fn request(
    recipes: &Recipes,
    host: &Host,
    client: &JoinClient,
    bundle: &VerifiedBundle,
    hostname: &str,
    address: IpAddr,
    deadline: Instant,
) -> Result<Credentials> {
    let files = &host.files;
    // The node's key is made here and never leaves the host. It is kept
    // before the request: a join interrupted after the control plane
    // recorded this host can only be repeated with the same key.
    let fresh_host = !files.exists(crate::paths::STATE_DIR)?;
    let kept = files.read_secret(NODE_KEY)?;
    let made_key = kept.is_none();
    let key = match kept {
        Some(pem) => rcgen::KeyPair::from_pem(&pem)
            .context("reading the node key kept by an earlier join (remove it to start over)")?,
        None => {
            let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256)
                .context("generating the node key")?;
            files.ensure_dir(crate::paths::STATE_DIR, &FileSpec::private_dir())?;
            files.ensure_dir(NODE_DIR, &FileSpec::private_dir())?;
            files.write(
                NODE_KEY,
                key.serialize_pem().as_bytes(),
                &FileSpec::secret(),
            )?;
            key
        }
    };
    let csr = csr(&key, hostname)?;
    let req = JoinRequest {
        token: bundle.token.expose_full(),
        hostname: hostname.to_string(),
        address: address.to_string(),
        csr,
        dcn_version: env!("CARGO_PKG_VERSION").into(),
        proof: None,
    };
    // Each attempt signs a fresh challenge: the proof that this host holds
    // its key now, which the control plane wants of a host joining again.
    let join = || client.join_with_proof(&req, &key, &bundle.token.id);
    let reply = match crate::edge::join::retry(deadline, "the join service", join) {
        Ok(r) => r,
        // Refused: the control plane recorded nothing, so neither does
        // this host. (Anything else may have reached it: keep the key.)
        Err(e)
            if made_key
                && e.downcast_ref::<crate::edge::join::client::Refused>()
                    .is_some() =>
        {
            if fresh_host {
                files.remove_all(crate::paths::STATE_DIR)?;
            } else {
                files.remove(NODE_KEY)?;
            }
            return Err(e);
        }
        Err(e) => return Err(e),
    };
    // Signed by a CA of this node's own (the OVN SB trusts it while the
    // node is a member), so what matters here is that it is for our key.
    let info = crate::pki::CertInfo::from_pem(&reply.node_certificate)
        .context("the join service returned an unreadable certificate")?;
    if info.spki_public_key != key.public_key_raw() {
        bail!(
            "the join service returned a certificate for another key; is the join endpoint really this control plane?"
        );
    }
    let creds = Credentials {
        site: reply.site,
        node_secret: Secret::new(reply.node_secret),
        credentials: reply.credentials,
    };
    creds.check(recipes)?;
    files.write(
        NODE_CERT,
        reply.node_certificate.as_bytes(),
        &FileSpec::secret(),
    )?;
    files.write(
        CREDENTIALS,
        creds.to_yaml()?.as_bytes(),
        &FileSpec::secret(),
    )?;
    Ok(creds)
}

/// A CSR for the node's `key`, named `hostname` (the centre takes only its
/// key from it).
pub(crate) fn csr(key: &rcgen::KeyPair, hostname: &str) -> Result<String> {
    let mut params =
        rcgen::CertificateParams::new(vec![hostname.to_string()]).context("the node's name")?;
    params.distinguished_name = rcgen::DistinguishedName::new();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, hostname);
    params
        .serialize_request(key)
        .context("making the CSR")?
        .pem()
        .context("encoding the CSR")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recipes::Recipes;

    #[test]
    fn credentials_are_kept_as_their_type_and_read_back() {
        let root = tempfile::tempdir().unwrap();
        let files = Files::new(root.path(), false);
        let recipes = Recipes::embedded().unwrap();
        let creds = Credentials::sample(&recipes, "edge1", "edge1-n1");
        creds.check(&recipes).unwrap();
        files
            .ensure_dir(NODE_DIR, &FileSpec::private_dir())
            .unwrap();
        let text = creds.to_yaml().unwrap();
        files
            .write(CREDENTIALS, text.as_bytes(), &FileSpec::secret())
            .unwrap();
        assert_eq!(Credentials::load(&files).unwrap(), Some(creds.clone()));
        assert!(
            text.contains(
                "site_rabbit:\n    username: dcn-node-edge1-n1\n    password: site_rabbit-pw\n"
            ),
            "{text}"
        );
        assert!(!format!("{creds:?}").contains("-pw"), "Debug redacts");

        // An older dcn's layout: asked for again, not an error.
        let old = "site: edge1\nrabbitUser: dcn-node-x\nrabbitPassword: p\nserviceUser: dcn-node-x\nservicePassword: p\nmetadataSecret: p\nnodeSecret: n\n";
        files
            .write(CREDENTIALS, old.as_bytes(), &FileSpec::secret())
            .unwrap();
        assert_eq!(Credentials::load(&files).unwrap(), None);
        // A damaged file is named, and its contents are not quoted.
        let damaged = "site: edge1\nnodeSecret: hunter2hunter2\ncredentials: [\n";
        files
            .write(CREDENTIALS, damaged.as_bytes(), &FileSpec::secret())
            .unwrap();
        let e = format!("{:#}", Credentials::load(&files).unwrap_err());
        assert!(
            e.contains("is damaged; remove it") && !e.contains("hunter2"),
            "{e}"
        );
    }

    /// The kept credentials are dcn's own secret: refused, with the way
    /// out, when others may read them or another user owns them.
    #[test]
    fn credentials_others_may_read_or_own_are_refused() {
        let root = tempfile::tempdir().unwrap();
        let files = Files::new(root.path(), false);
        let creds = Credentials::sample(&Recipes::embedded().unwrap(), "edge1", "n1");
        let text = creds.to_yaml().unwrap();
        files
            .write(CREDENTIALS, text.as_bytes(), &FileSpec::secret())
            .unwrap();
        let hp = files.host_path(CREDENTIALS).unwrap();
        let mode = |m| {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&hp, std::fs::Permissions::from_mode(m)).unwrap()
        };
        for m in [0o644, 0o640, 0o604] {
            mode(m);
            let e = format!("{:#}", Credentials::load(&files).unwrap_err());
            assert!(
                e.contains(&format!(
                    "{} holds a secret, but its mode {m:03o} lets other users at it: `chmod 600 {}`",
                    hp.display(),
                    hp.display()
                )),
                "{e}"
            );
            assert!(!e.contains("node-pw"), "{e}");
        }
        mode(0o600);
        assert_eq!(Credentials::load(&files).unwrap(), Some(creds));
        if nix::unistd::geteuid().is_root() {
            let other = Some(nix::unistd::Uid::from_raw(4242));
            nix::unistd::chown(&hp, other, None).unwrap();
            let e = format!("{:#}", Credentials::load(&files).unwrap_err());
            assert!(e.contains("belongs to uid 4242"), "{e}");
        }
    }

    #[test]
    fn a_reply_without_what_the_recipes_declare_is_refused() {
        let recipes = Recipes::embedded().unwrap();
        let mut creds = Credentials::sample(&recipes, "edge1", "edge1-n1");
        creds.credentials.remove("metadata_secret");
        let e = format!("{:#}", creds.check(&recipes).unwrap_err());
        assert!(
            e.contains("no site credential metadata_secret")
                && e.contains("run the control plane's dcn version"),
            "{e}"
        );
        let mut creds = Credentials::sample(&recipes, "edge1", "edge1-n1");
        creds.credentials.get_mut("site_rabbit").unwrap().username = None;
        let e = format!("{:#}", creds.check(&recipes).unwrap_err());
        assert!(e.contains("site_rabbit is not the kind"), "{e}");
    }
}
