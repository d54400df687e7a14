//! Who the control plane is on the network: its host name and the address
//! services listen on, from the config or detected on the host.

use crate::config::StandaloneConfig;
use anyhow::{Context, Result, bail};
use std::net::IpAddr;
use std::path::Path;

/// The control plane's name and address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub hostname: String,
    pub address: IpAddr,
    /// Every name and address certificates must carry.
    pub dns_names: Vec<String>,
}

impl Identity {
    /// From the config, filling what it leaves empty from the host under
    /// `root` (detection needs the live system, so it only works for `/`).
    pub fn resolve(config: &StandaloneConfig, root: &Path) -> Result<Identity> {
        let cp = &config.control_plane;
        let live = root == Path::new("/");
        let hostname = match &cp.hostname {
            Some(h) => h.to_string(),
            None if live => nix::unistd::gethostname()
                .context("reading this host's name")?
                .to_string_lossy()
                .into_owned(),
            None => {
                let p = root.join("etc/hostname");
                let spec = crate::host::read::ReadSpec::up_to(crate::host::read::MAX_STATE);
                crate::host::read::read_string(&p, &spec)
                    .map(|s| s.trim().to_string())
                    .with_context(|| {
                        format!("reading {} (or set controlPlane.hostname)", p.display())
                    })?
            }
        };
        hostname.parse::<crate::types::Hostname>().map_err(|e| {
            anyhow::anyhow!("this host's name is not usable for the control plane: {e}; set controlPlane.hostname in the config")
        })?;
        let address = match cp.address {
            Some(a) => a,
            None if live => crate::host::facts::detect_address()?,
            None => bail!("controlPlane.address must be set in the config when --root is not /"),
        };
        let mut dns_names = vec![hostname.clone()];
        if let Some(short) = hostname.split('.').next()
            && short != hostname
        {
            dns_names.push(short.to_string());
        }
        for n in &cp.extra_names {
            if !dns_names.contains(&n.to_string()) {
                dns_names.push(n.to_string());
            }
        }
        Ok(Identity {
            hostname,
            address,
            dns_names,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_values_win_and_names_are_collected() {
        let mut c = StandaloneConfig::default();
        c.control_plane.hostname = Some("cp.lab.test".parse().unwrap());
        c.control_plane.address = Some("10.240.0.10".parse().unwrap());
        c.control_plane.extra_names = vec!["cloud.test".parse().unwrap()];
        let id = Identity::resolve(&c, Path::new("/nonexistent")).unwrap();
        assert_eq!(id.hostname, "cp.lab.test");
        assert_eq!(id.dns_names, vec!["cp.lab.test", "cp", "cloud.test"]);
    }

    #[test]
    fn a_folder_root_needs_an_address() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("etc")).unwrap();
        std::fs::write(dir.path().join("etc/hostname"), "cp1\n").unwrap();
        let err = Identity::resolve(&StandaloneConfig::default(), dir.path()).unwrap_err();
        assert!(format!("{err:#}").contains("controlPlane.address must be set"));
    }
}
