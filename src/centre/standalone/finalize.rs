//! The finalize phase: what operators use afterwards — `clouds.yaml` for
//! the `openstack` client (in /etc/dcn and root's config) and an
//! `admin-openrc`, both 0600, and the CA certificate readable by all.

use crate::engine::{Context, Step};
use crate::host::FileSpec;
use crate::paths::PUBLIC_CA;
use crate::recipes::Values;
use anyhow::Result;
use std::sync::Arc;

pub const CLOUDS_YAML: &str = "/etc/dcn/clouds.yaml";
pub const ROOT_CLOUDS_YAML: &str = "/root/.config/openstack/clouds.yaml";
pub const OPENRC: &str = "/etc/dcn/admin-openrc";

pub struct ClientFiles {
    pub values: Arc<Values>,
}

impl ClientFiles {
    fn files(&self, ctx: &Context) -> Result<Vec<(&'static str, String, FileSpec)>> {
        let v = &self.values;
        let address = &v.cp["address"];
        let region = &v.cp["region"];
        let password = v
            .password
            .get("keystone_admin")
            .cloned()
            .unwrap_or_default();
        let clouds = format!(
            "# Written by dcn: the admin of this control plane. `export OS_CLOUD=dcn`.\nclouds:\n  dcn:\n    auth:\n      auth_url: https://{address}:5000/v3\n      username: admin\n      password: {password}\n      project_name: admin\n      user_domain_name: Default\n      project_domain_name: Default\n    region_name: {region}\n    identity_api_version: 3\n    cacert: {PUBLIC_CA}\n"
        );
        let openrc = format!(
            "# Written by dcn: `. {OPENRC}` for the openstack client.\nexport OS_AUTH_URL=https://{address}:5000/v3\nexport OS_CACERT={PUBLIC_CA}\nexport OS_USERNAME=admin\nexport OS_PASSWORD={password}\nexport OS_PROJECT_NAME=admin\nexport OS_USER_DOMAIN_NAME=Default\nexport OS_PROJECT_DOMAIN_NAME=Default\nexport OS_REGION_NAME={region}\nexport OS_IDENTITY_API_VERSION=3\nexport OS_CLOUD=\n"
        );
        let ca = if ctx.host.files.exists(crate::paths::CA_CERT)? {
            crate::certs::authority::Authorities::new(&ctx.host.files).trusted_pem()?
        } else {
            String::new()
        };
        Ok(vec![
            (CLOUDS_YAML, clouds.clone(), FileSpec::secret()),
            (ROOT_CLOUDS_YAML, clouds, FileSpec::secret()),
            (OPENRC, openrc, FileSpec::secret()),
            (PUBLIC_CA, ca, FileSpec::public()),
        ])
    }
}

impl Step for ClientFiles {
    /// Only files written through `Files`, which fsyncs them.
    fn needs_flush(&self) -> bool {
        false
    }
    fn name(&self) -> String {
        "finalize.client-files".into()
    }
    fn describe(&self) -> String {
        format!("write {CLOUDS_YAML}, {ROOT_CLOUDS_YAML} and {OPENRC} (0600)")
    }
    fn is_done(&self, ctx: &Context) -> Result<bool> {
        for (path, contents, spec) in self.files(ctx)? {
            if !ctx.host.files.matches(path, contents.as_bytes(), &spec)? {
                return Ok(false);
            }
        }
        Ok(true)
    }
    fn apply(&self, ctx: &Context) -> Result<()> {
        ctx.host
            .files
            .ensure_dir(crate::paths::ETC_DIR, &FileSpec::public_dir())?;
        ctx.host
            .files
            .ensure_dir("/root/.config/openstack", &FileSpec::private_dir())?;
        for (path, contents, spec) in self.files(ctx)? {
            ctx.host.files.write(path, contents.as_bytes(), &spec)?;
        }
        Ok(())
    }
}
