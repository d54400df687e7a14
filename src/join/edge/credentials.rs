//! The state the join keeps in `/var/lib/dcn/node/` (all 0600): the node's
//! key, made here and never sent, its certificate, and the site credentials
//! from the join reply; and the join request that produces them.

use crate::bundle::VerifiedBundle;
use crate::host::{FileSpec, Files, Host};
use crate::join::client::JoinClient;
use crate::join::protocol::JoinRequest;
use crate::secrets::Secret;
use anyhow::{Context, Result, bail};
use std::collections::BTreeMap;
use std::net::IpAddr;
use std::time::Instant;

const NODE_DIR: &str = "/var/lib/dcn/node";
pub(super) const NODE_KEY: &str = "/var/lib/dcn/node/node.key";
pub(super) const NODE_CERT: &str = "/var/lib/dcn/node/node.crt";
const CREDENTIALS: &str = "/var/lib/dcn/node/credentials.yaml";

/// What the join reply gave this node, kept for re-runs.
pub(crate) struct Credentials {
    pub site: String,
    pub rabbit_user: String,
    pub rabbit_password: Secret,
    pub service_user: String,
    pub service_password: Secret,
    pub metadata_secret: Secret,
    pub node_secret: Secret,
}

impl Credentials {
    fn to_yaml(&self) -> String {
        format!(
            "# dcn: this node's credentials from the join reply. Secret.\nsite: {}\nrabbitUser: {}\nrabbitPassword: {}\nserviceUser: {}\nservicePassword: {}\nmetadataSecret: {}\nnodeSecret: {}\n",
            self.site,
            self.rabbit_user,
            self.rabbit_password.expose(),
            self.service_user,
            self.service_password.expose(),
            self.metadata_secret.expose(),
            self.node_secret.expose()
        )
    }

    pub(in crate::join) fn load(files: &Files) -> Result<Option<Credentials>> {
        let Some(text) = files.read_string(CREDENTIALS)? else {
            return Ok(None);
        };
        let m: BTreeMap<String, String> =
            serde_yaml::from_str(&text).with_context(|| format!("{CREDENTIALS} is damaged"))?;
        let get = |k: &str| {
            m.get(k)
                .cloned()
                .with_context(|| format!("{CREDENTIALS} lacks {k}"))
        };
        Ok(Some(Credentials {
            site: get("site")?,
            rabbit_user: get("rabbitUser")?,
            rabbit_password: Secret::new(get("rabbitPassword")?),
            service_user: get("serviceUser")?,
            service_password: Secret::new(get("servicePassword")?),
            metadata_secret: Secret::new(get("metadataSecret")?),
            node_secret: Secret::new(get("nodeSecret")?),
        }))
    }
}

/// Join the site (or, when this host joined it before, reuse the stored
/// credentials), and keep what the reply carries.
pub fn request(
    host: &Host,
    client: &JoinClient,
    bundle: &VerifiedBundle,
    hostname: &str,
    address: IpAddr,
    rejoined: bool,
    deadline: Instant,
) -> Result<Credentials> {
    let files = &host.files;
    if rejoined
        && let Some(c) = Credentials::load(files)?
        && files.exists(NODE_CERT)?
    {
        tracing::info!(
            "    this host joined site {} before; keeping its credentials",
            c.site
        );
        return Ok(c);
    }
    // The node's key is made here and never leaves the host. It is kept
    // before the request: a join interrupted after the control plane
    // recorded this host can only be repeated with the same key.
    let fresh_host = !files.exists(crate::paths::STATE_DIR)?;
    let kept = files.read_string(NODE_KEY)?;
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
    let mut params =
        rcgen::CertificateParams::new(vec![hostname.to_string()]).context("the node's name")?;
    params.distinguished_name = rcgen::DistinguishedName::new();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, hostname);
    let csr = params
        .serialize_request(&key)
        .context("making the CSR")?
        .pem()
        .context("encoding the CSR")?;
    let req = JoinRequest {
        token: bundle.token.expose_full(),
        hostname: hostname.to_string(),
        address: address.to_string(),
        csr,
        dcn_version: env!("CARGO_PKG_VERSION").into(),
    };
    let reply = match crate::join::retry(deadline, "the join service", || client.join(&req)) {
        Ok(r) => r,
        // Refused: the control plane recorded nothing, so neither does
        // this host. (Anything else may have reached it: keep the key.)
        Err(e) if made_key && e.downcast_ref::<crate::join::client::Refused>().is_some() => {
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
        site: reply.site.clone(),
        rabbit_user: reply.messaging.username.clone(),
        rabbit_password: Secret::new(reply.messaging.password.clone()),
        service_user: reply.service_user.username.clone(),
        service_password: Secret::new(reply.service_user.password.clone()),
        metadata_secret: Secret::new(reply.metadata_secret.clone()),
        node_secret: Secret::new(reply.node_secret.clone()),
    };
    files.write(
        NODE_CERT,
        reply.node_certificate.as_bytes(),
        &FileSpec::secret(),
    )?;
    files.write(CREDENTIALS, creds.to_yaml().as_bytes(), &FileSpec::secret())?;
    Ok(creds)
}
