//! Each booting node's own ISO: a copy of the generic edge ISO with the
//! site's bundle and the node's config embedded (`dcn image embed`'s code:
//! the same verification and limits), under a name no one can guess, since
//! the ISO holds a join token; and the server the BMCs fetch them from,
//! HTTPS with the control plane's `join` certificate unless the inventory
//! allows plain HTTP.

use crate::config::NodeConfig;
use crate::host::{FileSpec, Files};
use crate::image::embed::{Destination, EmbedReport, embed};
use anyhow::{Context, Result};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// The directory of a site's node ISOs (served, nothing else is in it).
pub fn media_dir(site: &str) -> String {
    format!("{}/media", super::bundle::site_dir(site))
}

/// A node's ISO, ready to serve.
#[derive(Debug, Clone)]
pub struct NodeMedia {
    /// The file's name in the media directory (the URL path).
    pub file_name: String,
    pub path: PathBuf,
    pub report: EmbedReport,
}

/// Write `node`'s ISO into the site's media directory: the node's earlier
/// ISOs go first (they hold an older token), then a fresh copy of `iso`
/// with `bundle` and `node` embedded.
pub fn prepare(
    recipes: &crate::recipes::Recipes,
    files: &Files,
    site: &str,
    iso: &Path,
    bundle: &Path,
    node: &NodeConfig,
) -> Result<NodeMedia> {
    let dir = media_dir(site);
    files.ensure_dir(&dir, &FileSpec::private_dir())?;
    let host_dir = files.host_path(&dir)?;
    let hostname = node.hostname.as_str();
    remove_for(files, &dir, hostname)?;
    // The node config goes through a private file: embed reads files, as
    // `dcn image embed` does, and checks them the same way.
    let yaml = serde_yaml::to_string(node).context("writing the node config")?;
    let config_file = format!("{}/{hostname}.node.yaml", super::bundle::site_dir(site));
    files.write(&config_file, yaml.as_bytes(), &FileSpec::secret())?;
    let file_name = format!(
        "{hostname}-{}.iso",
        crate::secrets::random_string(16, b"abcdefghijklmnopqrstuvwxyz0123456789")
    );
    let path = host_dir.join(&file_name);
    let report = embed(
        recipes,
        iso,
        bundle,
        &files.host_path(&config_file)?,
        &Destination::Copy(path.clone()),
    )
    .with_context(|| format!("making {hostname}'s ISO from {}", iso.display()))?;
    Ok(NodeMedia {
        file_name,
        path,
        report,
    })
}

/// Remove `hostname`'s ISOs from the media directory `dir` (once it is
/// placed, or before a new one).
pub fn remove_for(files: &Files, dir: &str, hostname: &str) -> Result<()> {
    let Ok(names) = files.list(dir) else {
        return Ok(());
    };
    let prefix = format!("{hostname}-");
    for name in names {
        // `<host>-<16 alphanumerics>.iso`: a host whose name extends this
        // one's (`n1-a` for `n1`) has a longer middle part.
        let ours = name
            .strip_prefix(&prefix)
            .and_then(|rest| rest.strip_suffix(".iso"))
            .is_some_and(|mid| mid.len() == 16 && mid.bytes().all(|b| b.is_ascii_alphanumeric()));
        if ours {
            files.remove(format!("{dir}/{name}"))?;
        }
    }
    Ok(())
}

/// The running media server: its base URL as the BMCs reach it.
pub struct MediaServer {
    pub base_url: String,
}

/// Serve the media directory on `listen` in a thread, for the rest of the
/// process. `url` is how the BMCs reach it.
pub fn serve(
    files: &Files,
    site: &str,
    listen: SocketAddr,
    url: &str,
    tls: Option<rustls::ServerConfig>,
) -> Result<MediaServer> {
    files.ensure_dir(media_dir(site), &FileSpec::private_dir())?;
    let dir = files.host_path(media_dir(site))?;
    let mut server = crate::bmc::ImageServer::bind(&dir, listen)?;
    if let Some(tls) = tls {
        server = server.with_tls(tls);
    }
    let base_url = url.trim_end_matches('/').to_string();
    std::thread::Builder::new()
        .name("media-server".into())
        .spawn(move || {
            if let Err(e) = server.run() {
                tracing::error!("the media server stopped: {e:#}");
            }
        })
        .context("starting the media server")?;
    Ok(MediaServer { base_url })
}

/// The control plane's `join` certificate, for the media server's HTTPS.
pub fn control_plane_tls(files: &Files) -> Result<rustls::ServerConfig> {
    let cert = files
        .read_string(crate::paths::leaf_cert("join"))?
        .context("the join certificate is missing; is this the control plane?")?;
    let key = files
        .read_secret(crate::paths::leaf_key("join"))?
        .context("the join key is missing; is this the control plane?")?;
    crate::tls::server_config(&cert, &key, "the media server")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_hosts_own_isos_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        for name in [
            "n1-abcdefgh12345678.iso",
            "n1-a-abcdefgh12345678.iso",
            "n1-short.iso",
            "n10-abcdefgh12345678.iso",
            "n1-abcdefgh12345678.iso.partial",
        ] {
            std::fs::write(dir.path().join(name), b"x").unwrap();
        }
        remove_for(&Files::new(dir.path(), false), "/", "n1").unwrap();
        let mut left: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(
            left,
            [
                "n1-a-abcdefgh12345678.iso",
                "n1-abcdefgh12345678.iso.partial",
                "n1-short.iso",
                "n10-abcdefgh12345678.iso"
            ]
        );
    }
}
