//! Writing a bundle: sign the manifest, pack the members into a ustar
//! archive with fixed metadata, gzip it, and save it as a 0600 file.

use super::reader::{ReadOptions, read_bundle};
use super::{BundleContents, CA_CERT, MANIFEST, SIGNATURE, TOKEN};
use crate::host::{FileSpec, Files};
use crate::pki::CertificateAuthority;
use crate::types::endpoints::Sha256Digest;
use anyhow::{Context, Result, anyhow, bail};
use base64::Engine;
use flate2::Compression;
use flate2::write::GzEncoder;
use std::fs;
use std::io::Write;
use std::path::Path;
use std::time::SystemTime;

/// Mode of every member and of the saved file: a bundle is a bearer secret.
pub const BUNDLE_MODE: u32 = 0o600;

/// The `.tar.gz` bytes of a bundle holding `contents`, signed by `ca`. The
/// writer fills in the manifest's `tokenId` and `members` and cuts the
/// timestamps to whole seconds; the other fields are written as given. The
/// result is read back, verified and compared before it is returned, so dcn
/// never hands out a bundle it would refuse or that says something else.
pub fn write_bundle(
    recipes: &crate::recipes::Recipes,
    contents: &BundleContents,
    ca: &CertificateAuthority,
) -> Result<Vec<u8>> {
    if contents.ca_cert_pem != ca.cert_pem() {
        bail!(
            "internal error: the bundle's CA certificate is not the certificate of the CA that signs it"
        );
    }
    let token_text = format!("{}\n", contents.token.expose_full());
    let mut manifest = contents.manifest.clone();
    manifest.created_at = whole_seconds(manifest.created_at);
    manifest.not_after = whole_seconds(manifest.not_after);
    manifest.token_id = contents.token.id.clone();
    manifest.members = [
        (
            CA_CERT.to_string(),
            Sha256Digest::of(contents.ca_cert_pem.as_bytes()),
        ),
        (TOKEN.to_string(), Sha256Digest::of(token_text.as_bytes())),
    ]
    .into();
    manifest
        .validate(recipes)
        .map_err(|p| anyhow!("the bundle manifest is invalid: {}: {}", p.path, p.message))?;
    let manifest_yaml = manifest.to_yaml();
    let signature = ca
        .sign(manifest_yaml.as_bytes())
        .context("signing the bundle manifest")?;
    let signature_text = format!(
        "{}\n",
        base64::engine::general_purpose::STANDARD.encode(signature)
    );

    let mtime = unix_seconds(manifest.created_at);
    let mut tar = tar::Builder::new(Vec::new());
    for (name, data) in [
        (MANIFEST, manifest_yaml.as_bytes()),
        (CA_CERT, contents.ca_cert_pem.as_bytes()),
        (TOKEN, token_text.as_bytes()),
        (SIGNATURE, signature_text.as_bytes()),
    ] {
        let mut header = tar::Header::new_ustar();
        header
            .set_path(name)
            .with_context(|| format!("naming the bundle member {name}"))?;
        header.set_entry_type(tar::EntryType::Regular);
        header.set_size(data.len() as u64);
        header.set_mode(BUNDLE_MODE);
        header.set_uid(0);
        header.set_gid(0);
        header.set_mtime(mtime);
        header.set_cksum();
        tar.append(&header, data)
            .with_context(|| format!("adding {name} to the bundle"))?;
    }
    let tar = tar.into_inner().context("finishing the bundle archive")?;
    let mut gz = GzEncoder::new(Vec::new(), Compression::best());
    gz.write_all(&tar).context("compressing the bundle")?;
    let bytes = gz.finish().context("compressing the bundle")?;

    // Read back as of now: the CA must be valid when the bundle is handed
    // out. Expiry is not checked, so a bundle with a past createdAt (tests)
    // still reads back.
    let check = ReadOptions {
        now: SystemTime::now(),
        ca_pin: Some(ca.pin()),
        check_expiry: false,
    };
    let back = read_bundle(recipes, bytes.as_slice(), &check)
        .map_err(|e| anyhow!("internal error: the bundle just written does not read back: {e}"))?;
    if back.manifest != manifest {
        bail!("internal error: the bundle manifest reads back different from what was written");
    }
    Ok(bytes)
}

fn unix_seconds(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The manifest holds whole seconds; drop the rest so it reads back equal.
fn whole_seconds(t: SystemTime) -> SystemTime {
    match t.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(d) => SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(d.as_secs()),
        Err(_) => t,
    }
}

/// Save bundle bytes to `path` with mode 0600: written to a temporary file
/// in the same folder (created 0600, so the secret is never readable by
/// others), synced, then renamed over `path`. A symbolic link at `path` is
/// refused rather than followed.
pub fn save_bundle(path: &Path, bytes: &[u8]) -> Result<()> {
    // What is at `path` itself (a link not followed), which Files does
    // not tell.
    match fs::symlink_metadata(path) {
        Ok(md) if md.file_type().is_symlink() => bail!(
            "refusing to write the bundle to {}: it is a symbolic link, and a bundle is a secret that must not go wherever a link points; remove the link or choose another path",
            path.display()
        ),
        Ok(md) if !md.is_file() => bail!(
            "refusing to write the bundle to {}: it exists and is not a regular file; choose another path",
            path.display()
        ),
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e).with_context(|| format!("inspecting {}", path.display())),
    }
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .with_context(|| format!("{} names no file", path.display()))?;
    // The operator's folder as a tree of its own, so a relative path works:
    // a temporary file created 0600, synced, renamed into place.
    let spec = FileSpec::secret().mode(BUNDLE_MODE);
    (Files::new(parent, false).write(Path::new("/").join(name), bytes, &spec))
        .with_context(|| format!("writing the bundle to {}", path.display()))?;
    Ok(())
}
