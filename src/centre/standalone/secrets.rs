//! The secrets phase of `standalone init`: state directories, service
//! passwords, the CA and the control plane's leaf certificates. Nothing that
//! exists is ever regenerated: re-running keeps every secret byte for byte.

use crate::centre::control_plane::identity::Identity;
use crate::centre::renewal::leaves;
use crate::certs::authority::Authorities;
use crate::certs::policy::Policy;
use crate::engine::{Context, Phase, Step};
use crate::host::FileSpec;
use crate::passwords::PasswordStore;
use crate::paths::{self, CA_CERT, CA_KEY, PKI_DIR, SECRETS_DIR, STATE_DIR};
use crate::pki::{CertInfo, CertificateAuthority, LeafRequest};
use crate::recipes::Recipes;
use anyhow::{Context as _, Result, bail};
use std::time::SystemTime;

/// Passwords the control plane needs, as its recipes declare them: one per
/// database, one per service user, the admin's, the messaging user's and
/// the metadata proxy secret.
pub fn control_plane_passwords(recipes: &Recipes) -> Result<Vec<String>> {
    recipes.passwords_for_roles(&["controller", "compute"])
}

/// The secrets phase. Certificates are issued with the lifetimes of
/// `policy`, and issued again when one is due.
pub fn phase(recipes: &Recipes, identity: &Identity, policy: Policy) -> Result<Phase<'static>> {
    let names = control_plane_passwords(recipes)?;
    let mut steps: Vec<Box<dyn Step>> = vec![
        Box::new(StateDirs),
        Box::new(Passwords { names }),
        Box::new(Ca),
    ];
    for (name, purpose, request) in leaves::requests(identity) {
        steps.push(Box::new(Leaf {
            name,
            purpose,
            request,
            policy,
        }));
    }
    Ok(Phase {
        name: "secrets",
        steps,
    })
}

struct StateDirs;

const PRIVATE_DIRS: [&str; 3] = [STATE_DIR, SECRETS_DIR, PKI_DIR];

impl Step for StateDirs {
    /// Only files written through `Files`, which fsyncs them.
    fn needs_flush(&self) -> bool {
        false
    }
    fn name(&self) -> String {
        "secrets.dirs".into()
    }
    fn describe(&self) -> String {
        format!("create {STATE_DIR} and its private directories (0700)")
    }
    fn is_done(&self, ctx: &Context) -> Result<bool> {
        for d in PRIVATE_DIRS {
            if !ctx.host.files.dir_matches(d, &FileSpec::private_dir())? {
                return Ok(false);
            }
        }
        Ok(true)
    }
    fn apply(&self, ctx: &Context) -> Result<()> {
        for d in PRIVATE_DIRS {
            ctx.host.files.ensure_dir(d, &FileSpec::private_dir())?;
        }
        Ok(())
    }
}

struct Passwords {
    names: Vec<String>,
}

impl Step for Passwords {
    /// Only files written through `Files`, which fsyncs them.
    fn needs_flush(&self) -> bool {
        false
    }
    fn name(&self) -> String {
        "secrets.passwords".into()
    }
    fn describe(&self) -> String {
        "generate missing service passwords".into()
    }
    fn is_done(&self, ctx: &Context) -> Result<bool> {
        let store = PasswordStore::load(&ctx.host.files)?;
        Ok((self.names.iter()).all(|n| store.get(n).is_ok()))
    }
    fn apply(&self, ctx: &Context) -> Result<()> {
        let mut store = PasswordStore::load(&ctx.host.files)?;
        let added = store.ensure(self.names.iter().map(String::as_str));
        store.save(&ctx.host.files)?;
        let verb = if ctx.host.dry_run {
            "would generate"
        } else {
            "generated"
        };
        tracing::info!(
            "    {verb} {} password(s): {}",
            added.len(),
            added.join(", ")
        );
        Ok(())
    }
}

struct Ca;

impl Step for Ca {
    /// Only files written through `Files`, which fsyncs them.
    fn needs_flush(&self) -> bool {
        false
    }
    fn name(&self) -> String {
        "secrets.ca".into()
    }
    fn describe(&self) -> String {
        "create the dcn certificate authority".into()
    }
    fn is_done(&self, ctx: &Context) -> Result<bool> {
        let files = &ctx.host.files;
        match (files.exists(CA_CERT)?, files.exists(CA_KEY)?) {
            (true, true) => Ok(true),
            (false, false) => Ok(false),
            (cert, _) => bail!(
                "found {} without {}: restore the missing file from a backup, or remove {PKI_DIR} to create a new CA (every edge host must then join again)",
                if cert { CA_CERT } else { CA_KEY },
                if cert { CA_KEY } else { CA_CERT },
            ),
        }
    }
    fn apply(&self, ctx: &Context) -> Result<()> {
        let ca = CertificateAuthority::generate("dcn CA")?;
        let files = &ctx.host.files;
        files.write(
            CA_KEY,
            ca.key_pem().expose().as_bytes(),
            &FileSpec::secret(),
        )?;
        files.write(CA_CERT, ca.cert_pem().as_bytes(), &FileSpec::secret())?;
        Ok(())
    }
}

/// Load the CA in service from the state directory.
pub fn load_ca(files: &crate::host::Files) -> Result<CertificateAuthority> {
    Authorities::new(files).current()
}

struct Leaf {
    name: &'static str,
    purpose: &'static str,
    request: LeafRequest,
    policy: Policy,
}

impl Step for Leaf {
    /// Only files written through `Files`, which fsyncs them.
    fn needs_flush(&self) -> bool {
        false
    }
    fn name(&self) -> String {
        format!("secrets.cert-{}", self.name)
    }
    fn describe(&self) -> String {
        format!("issue the {} certificate ({})", self.name, self.purpose)
    }
    fn is_done(&self, ctx: &Context) -> Result<bool> {
        let files = &ctx.host.files;
        if !files.exists(CA_CERT)? {
            return Ok(false);
        }
        let signer = Authorities::new(files).leaf_signer()?;
        let why = leaves::reason(
            files,
            self.name,
            &signer,
            self.policy.renew_when_left,
            SystemTime::now(),
        )?;
        if let Some(why) = why {
            tracing::debug!("{} certificate: {why}", self.name);
            return Ok(false);
        }
        // Existing certificates are kept; a changed name or address is
        // reported rather than silently re-issued.
        let cert_path = paths::leaf_cert(self.name);
        let cert = files.read_string(&cert_path)?.unwrap_or_default();
        let info = CertInfo::from_pem(&cert).with_context(|| format!("reading {cert_path}"))?;
        let missing: Vec<String> = self
            .request
            .dns_names
            .iter()
            .filter(|n| !info.dns_names.contains(n))
            .cloned()
            .chain(
                self.request
                    .ip_addresses
                    .iter()
                    .filter(|a| !info.ip_addresses.contains(a))
                    .map(|a| a.to_string()),
            )
            .collect();
        if !missing.is_empty() {
            tracing::warn!(
                "{cert_path} does not cover {}; run `dcn cert renew --force` to issue new certificates",
                missing.join(", ")
            );
        }
        Ok(true)
    }
    fn apply(&self, ctx: &Context) -> Result<()> {
        let files = &ctx.host.files;
        if files.is_dry_run() && !files.exists(CA_CERT)? {
            // The CA is created by an earlier step that a dry run skipped.
            files.write(paths::leaf_cert(self.name), b"", &FileSpec::secret())?;
            files.write(paths::leaf_key(self.name), b"", &FileSpec::secret())?;
            return Ok(());
        }
        let signer = Authorities::new(files).leaf_signer()?;
        leaves::issue(
            files,
            self.name,
            &self.request,
            &signer,
            self.policy.control_plane,
        )?;
        Ok(())
    }
}

/// Before the services are configured: issue again any control-plane
/// certificate that became due since the secrets phase (the packages phase
/// takes minutes; a lab drilling renewal gives certificates a few), so no
/// service starts with one about to expire. After init, `dcn cert renew`
/// (its timer) keeps them current.
pub struct RenewDue {
    requests: Vec<(&'static str, LeafRequest)>,
    policy: Policy,
}

impl RenewDue {
    pub fn new(identity: &Identity, policy: Policy) -> RenewDue {
        RenewDue {
            requests: (leaves::requests(identity).into_iter())
                .map(|(name, _, request)| (name, request))
                .collect(),
            policy,
        }
    }

    fn due(&self, files: &crate::host::Files) -> Result<Vec<&(&'static str, LeafRequest)>> {
        if !files.exists(CA_CERT)? {
            return Ok(Vec::new());
        }
        let signer = Authorities::new(files).leaf_signer()?;
        let now = SystemTime::now();
        let mut out = Vec::new();
        for r in &self.requests {
            if leaves::reason(files, r.0, &signer, self.policy.renew_when_left, now)?.is_some() {
                out.push(r);
            }
        }
        Ok(out)
    }
}

impl Step for RenewDue {
    /// Only files written through `Files`, which fsyncs them.
    fn needs_flush(&self) -> bool {
        false
    }
    fn name(&self) -> String {
        "secrets.renew-due".into()
    }
    fn describe(&self) -> String {
        "issue again the certificates that became due".into()
    }
    fn is_done(&self, ctx: &Context) -> Result<bool> {
        Ok(ctx.host.files.is_dry_run() || self.due(&ctx.host.files)?.is_empty())
    }
    fn apply(&self, ctx: &Context) -> Result<()> {
        let files = &ctx.host.files;
        let signer = Authorities::new(files).leaf_signer()?;
        for (name, request) in self.due(files)? {
            leaves::issue(files, name, request, &signer, self.policy.control_plane)?;
            tracing::info!("    issued the {name} certificate again (it became due)");
        }
        Ok(())
    }
}
