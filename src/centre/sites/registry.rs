//! Storage of sites, tokens and nodes: one JSON file per record, secrets in
//! their own 0600 YAML files, and an exclusive lock around changes.

use crate::host::{FileSpec, Files};
use anyhow::{Context, Result, bail};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

const SITES: &str = "/var/lib/dcn/sites";
const TOKENS: &str = "/var/lib/dcn/tokens";
const NODES: &str = "/var/lib/dcn/nodes";
const SITE_CONFIGS: &str = "/var/lib/dcn/site-config";
const LOCK: &str = "/var/lib/dcn/registry.lock";

/// An edge site: an availability zone with its own credentials.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Site {
    pub name: String,
    pub created_at: String,
    /// The nova host aggregate whose availability zone is the site.
    pub aggregate_id: Option<u64>,
    /// Set when the site was revoked; its credentials are gone.
    pub revoked_at: Option<String>,
}

/// A join token, by its public id; the secret part is kept only as a hash.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenRecord {
    pub id: String,
    /// `sha256:<hex>` of the whole token.
    pub hash: String,
    pub site: String,
    pub created_at: String,
    pub not_after: String,
    pub max_uses: u32,
    pub uses: u32,
}

/// Where a joined node is in its journey.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NodeState {
    /// Credentials handed out; nova-compute not seen yet.
    Joined,
    /// Mapped to the cell and in its site's aggregate.
    Placed,
}

/// A joined edge host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeRecord {
    pub hostname: String,
    pub site: String,
    pub address: String,
    pub joined_at: String,
    /// `sha256:<hex>` of the node's bearer secret for status requests.
    pub secret_hash: String,
    pub state: NodeState,
    pub placed_at: Option<String>,
    /// Pin (SPKI digest) of the node's key: a join naming a known host must
    /// come with a CSR for this key, i.e. from the host itself.
    #[serde(default)]
    pub key_pin: Option<String>,
    /// The node's own CA certificate (PEM), which signed its certificate and
    /// nothing else: the OVN southbound trusts it while the node is a
    /// member ([`super::southbound_members`]).
    #[serde(default, rename = "ovnCa")]
    pub southbound_ca: Option<String>,
    /// The CAs of the node's earlier certificates, trusted by the SB until
    /// they expire (each lives as long as the certificate it signed): an
    /// open session made with one goes on, a new one uses the new
    /// certificate.
    #[serde(
        default,
        rename = "previousOvnCas",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub previous_southbound_cas: Vec<String>,
    /// The node's certificate (PEM), as last issued.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub certificate: Option<String>,
    /// The pins of the CAs the node trusts, as it last reported them (a
    /// CA rotation finishes once every node trusts the new CA).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trusted_cas: Vec<String>,
    /// The site config revision the node last reported, when it has.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<Box<AppliedConfig>>,
}

/// A node record for tests: joined at the epoch, with no secret, key or
/// certificate; set what a test needs with struct update syntax.
#[cfg(test)]
impl NodeRecord {
    pub fn for_test(hostname: &str, site: &str, state: NodeState) -> NodeRecord {
        NodeRecord {
            hostname: hostname.into(),
            site: site.into(),
            address: "10.240.1.20".into(),
            joined_at: crate::timefmt::EARLIEST.into(),
            secret_hash: String::new(),
            state,
            placed_at: None,
            key_pin: None,
            southbound_ca: None,
            previous_southbound_cas: vec![],
            certificate: None,
            trusted_cas: vec![],
            config: None,
        }
    }
}

/// A node's last report of its site config.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AppliedConfig {
    /// The revision it runs (the last one it applied without error).
    pub revision: u64,
    pub reported_at: String,
    /// Why the last revision it fetched did not apply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The registry on a host's files.
pub struct Registry<'a> {
    files: &'a Files,
}

/// An exclusive lock on the registry, released on drop.
pub type Lock = crate::host::lock::FileLock;

impl<'a> Registry<'a> {
    pub fn new(files: &'a Files) -> Registry<'a> {
        Registry { files }
    }

    /// The files it keeps its records in.
    pub fn files(&self) -> &'a Files {
        self.files
    }

    /// Take the registry's lock (waits for another dcn holding it).
    pub fn lock(&self) -> Result<Lock> {
        for d in [SITES, TOKENS, NODES, SITE_CONFIGS] {
            self.files.ensure_dir(d, &FileSpec::private_dir())?;
        }
        Lock::wait(self.files, LOCK)
    }

    fn load<T: DeserializeOwned>(&self, path: &str) -> Result<Option<T>> {
        match self.files.read_string(path)? {
            None => Ok(None),
            Some(t) => serde_json::from_str(&t)
                .map(Some)
                .with_context(|| format!("{path} is damaged")),
        }
    }

    fn save<T: Serialize>(&self, path: &str, value: &T) -> Result<()> {
        let text = serde_json::to_string_pretty(value).expect("serialisable") + "\n";
        self.files
            .write(path, text.as_bytes(), &FileSpec::secret())?;
        Ok(())
    }

    fn list<T: DeserializeOwned>(&self, dir: &str) -> Result<Vec<T>> {
        let Ok(names) = self.files.list(dir) else {
            return Ok(Vec::new());
        };
        let names: Vec<String> = (names.into_iter())
            .filter(|n| n.ends_with(".json"))
            .collect();
        names
            .iter()
            .filter_map(|n| self.load(&format!("{dir}/{n}")).transpose())
            .collect()
    }

    pub fn site(&self, name: &str) -> Result<Option<Site>> {
        self.load(&format!("{SITES}/{name}.json"))
    }

    pub fn sites(&self) -> Result<Vec<Site>> {
        self.list(SITES)
    }

    pub fn save_site(&self, site: &Site) -> Result<()> {
        self.save(&format!("{SITES}/{}.json", site.name), site)
    }

    pub fn token(&self, id: &str) -> Result<Option<TokenRecord>> {
        if !id.bytes().all(|b| b.is_ascii_alphanumeric()) || id.is_empty() {
            return Ok(None);
        }
        self.load(&format!("{TOKENS}/{id}.json"))
    }

    pub fn tokens(&self) -> Result<Vec<TokenRecord>> {
        self.list(TOKENS)
    }

    pub fn save_token(&self, t: &TokenRecord) -> Result<()> {
        self.save(&format!("{TOKENS}/{}.json", t.id), t)
    }

    pub fn remove_token(&self, id: &str) -> Result<()> {
        self.files.remove(format!("{TOKENS}/{id}.json"))?;
        Ok(())
    }

    pub fn node(&self, hostname: &str) -> Result<Option<NodeRecord>> {
        if !crate::types::NodeName::is_valid(hostname) {
            return Ok(None);
        }
        self.load(&format!("{NODES}/{hostname}.json"))
    }

    pub fn nodes(&self) -> Result<Vec<NodeRecord>> {
        self.list(NODES)
    }

    pub fn save_node(&self, n: &NodeRecord) -> Result<()> {
        self.save(&format!("{NODES}/{}.json", n.hostname), n)
    }

    pub fn remove_node(&self, hostname: &str) -> Result<()> {
        self.files.remove(format!("{NODES}/{hostname}.json"))?;
        Ok(())
    }

    /// A site's service config, when one was set.
    pub fn site_config(&self, site: &str) -> Result<Option<super::site_config::Revision>> {
        self.load(&format!("{SITE_CONFIGS}/{site}.json"))
    }

    pub fn save_site_config(&self, r: &super::site_config::Revision) -> Result<()> {
        self.save(&format!("{SITE_CONFIGS}/{}.json", r.config.site), r)
    }

    /// The site's record, refusing unknown and revoked sites.
    pub fn active_site(&self, name: &str) -> Result<Site> {
        match self.site(name)? {
            None => bail!("there is no site {name:?}; `dcn site list` shows the sites"),
            Some(s) if s.revoked_at.is_some() => bail!("site {name} was revoked"),
            Some(s) => Ok(s),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_keeps_the_names_its_record_was_written_with() {
        let node = NodeRecord {
            southbound_ca: Some("CA".into()),
            previous_southbound_cas: vec!["OLD".into()],
            ..NodeRecord::for_test("edge1-n1", "edge1", NodeState::Joined)
        };
        let json = serde_json::to_value(&node).unwrap();
        assert_eq!(
            (&json["ovnCa"], &json["previousOvnCas"][0]),
            (&"CA".into(), &"OLD".into())
        );
        let back: NodeRecord = serde_json::from_value(json).unwrap();
        assert_eq!(back.previous_southbound_cas, ["OLD"]);
    }

    #[test]
    fn records_round_trip_with_private_modes() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let files = Files::new(dir.path(), false);
        let reg = Registry::new(&files);
        let _lock = reg.lock().unwrap();
        let site = Site {
            name: "edge1".into(),
            created_at: "2026-11-22T00:00:00Z".into(),
            aggregate_id: Some(3),
            revoked_at: None,
        };
        reg.save_site(&site).unwrap();
        let token = TokenRecord {
            id: "abc".into(),
            hash: "sha256:00".into(),
            site: "edge1".into(),
            created_at: "2026-11-22T00:00:00Z".into(),
            not_after: "2026-11-23T00:00:00Z".into(),
            max_uses: 1,
            uses: 0,
        };
        reg.save_token(&token).unwrap();
        assert_eq!(reg.site("edge1").unwrap(), Some(site.clone()));
        assert_eq!(reg.sites().unwrap(), vec![site]);
        assert_eq!(reg.token("abc").unwrap(), Some(token));
        let mode = |p: &str| {
            std::fs::metadata(dir.path().join(p))
                .unwrap()
                .permissions()
                .mode()
                & 0o777
        };
        assert_eq!(mode("var/lib/dcn/sites"), 0o700);
        assert_eq!(mode("var/lib/dcn/tokens/abc.json"), 0o600);
        assert!(
            reg.token("../x").unwrap().is_none(),
            "ids are checked before use as file names"
        );
        assert!(reg.node("../etc").unwrap().is_none());
        assert!(reg.active_site("nope").is_err());
    }
}
