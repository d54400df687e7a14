//! Names no edge node may take, whatever token or inventory asks for them:
//! the control plane's own host name (and so its own compute service,
//! RabbitMQ queue and OVN chassis), and any compute host the cloud already
//! has that is not a node of the site asking. A node named like one of
//! those would get that host's queue, chassis rights and aggregate place.
//! (`localhost` and over-long names are refused by
//! [`crate::types::NodeName`] itself.)

use super::registry::Registry;
use crate::host::Files;
use crate::openstack::compute::ComputeHosts;
use anyhow::Result;

/// The control plane's own host name: what it recorded when it was set
/// up, else its saved config's (none before `standalone init`).
pub fn control_plane_hostname(files: &Files) -> Result<Option<String>> {
    if let Some(d) = crate::deployment::Deployment::load(files)? {
        return Ok(Some(d.hostname));
    }
    if files.exists(crate::deployment::CONFIG_FILE)? {
        let config = crate::deployment::saved_config(files)?;
        return Ok(config
            .control_plane
            .hostname
            .map(|h| h.as_str().to_string()));
    }
    Ok(None)
}

/// Why `hostname` may not be a node of `site`, if it may not.
pub fn refusal(
    files: &Files,
    compute: &dyn ComputeHosts,
    site: &str,
    hostname: &str,
) -> Result<Option<String>> {
    if control_plane_hostname(files)?.as_deref() == Some(hostname) {
        return Ok(Some(format!(
            "{hostname} is the control plane's own host name; give the node a name of its own"
        )));
    }
    let own = Registry::new(files)
        .node(hostname)?
        .is_some_and(|n| n.site == site);
    if !own && compute.is_compute_host(hostname)? {
        return Ok(Some(format!(
            "{hostname} is already a compute host of this cloud that is not a node of site {site}; give the node another name (or, if it is an old node of this site, remove its compute service first: `openstack compute service delete`)"
        )));
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::FileSpec;

    struct Known(Vec<&'static str>);

    impl ComputeHosts for Known {
        fn is_compute_host(&self, hostname: &str) -> Result<bool> {
            Ok(self.0.contains(&hostname))
        }
    }

    #[test]
    fn the_control_plane_and_foreign_compute_hosts_are_refused_with_why() {
        let root = tempfile::tempdir().unwrap();
        let files = Files::new(root.path(), false);
        let compute = Known(vec!["cp", "legacy1", "edge1-n1"]);
        // No control plane yet: nothing is reserved but compute hosts.
        assert_eq!(refusal(&files, &compute, "edge1", "node9").unwrap(), None);
        files
            .write(
                crate::deployment::CONFIG_FILE,
                b"apiVersion: dcn/v1alpha1\nkind: StandaloneConfig\ncontrolPlane:\n  hostname: cp\n  address: 10.0.0.1\n",
                &FileSpec::secret(),
            )
            .unwrap();
        let why = refusal(&files, &Known(vec![]), "edge1", "cp")
            .unwrap()
            .unwrap();
        assert!(why.contains("control plane's own host name"), "{why}");
        let why = refusal(&files, &compute, "edge1", "legacy1")
            .unwrap()
            .unwrap();
        assert!(
            why.contains("already a compute host") && why.contains("site edge1"),
            "{why}"
        );
        assert_eq!(
            refusal(&files, &compute, "edge1", "edge1-n2").unwrap(),
            None
        );
        // A node of the site joining again is its own compute host.
        let registry = Registry::new(&files);
        registry
            .save_node(&crate::centre::sites::NodeRecord::for_test(
                "edge1-n1",
                "edge1",
                crate::centre::sites::NodeState::Joined,
            ))
            .unwrap();
        assert_eq!(
            refusal(&files, &compute, "edge1", "edge1-n1").unwrap(),
            None
        );
        assert!(
            refusal(&files, &compute, "edge2", "edge1-n1")
                .unwrap()
                .is_some()
        );
    }
}
