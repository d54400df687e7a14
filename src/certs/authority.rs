//! The control plane's certificate authorities, and the rotation from one
//! CA to the next, kept in `/var/lib/dcn/pki`:
//!
//! - `ca.crt`/`ca.key`: the CA in service.
//! - `ca-next.crt`/`ca-next.key`: while a rotation runs, the new CA. It is
//!   trusted beside the old one everywhere (the control plane's services,
//!   and each node through its certificate sync) before anything is signed
//!   with it; only new join bundles are (they pin it).
//! - `ca-finishing`: `dcn ca rotate --finish` is under way. From this
//!   marker on, the control plane's certificates are issued by the new CA;
//!   once they all are, the new CA takes the place of the old one, whose
//!   certificate goes to `retired/` (its key is deleted).
//!
//! Every state between these files' writes is one a re-run completes: a
//! power cut at any point leaves a rotation that `dcn ca rotate` (or
//! `--finish`) carries on.

use crate::host::{FileSpec, Files};
use crate::paths::{CA_CERT, CA_KEY};
use crate::pki::{CertInfo, CertificateAuthority, Pin};
use crate::secrets::Secret;
use anyhow::{Context, Result, bail};

pub const NEXT_CERT: &str = "/var/lib/dcn/pki/ca-next.crt";
pub const NEXT_KEY: &str = "/var/lib/dcn/pki/ca-next.key";
pub const FINISHING: &str = "/var/lib/dcn/pki/ca-finishing";
pub const RETIRED_DIR: &str = "/var/lib/dcn/pki/retired";

/// Where a CA rotation is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rotation {
    /// One CA.
    None,
    /// A new CA is trusted beside the old one; the old one signs.
    Overlap,
    /// `--finish` is moving the control plane to the new CA.
    Finishing,
}

/// The control plane's CAs, read from its state directory.
pub struct Authorities<'a> {
    files: &'a Files,
}

impl<'a> Authorities<'a> {
    pub fn new(files: &'a Files) -> Self {
        Authorities { files }
    }

    /// The CA in service (`ca.crt`/`ca.key`).
    pub fn current(&self) -> Result<CertificateAuthority> {
        load(self.files, CA_CERT, CA_KEY).and_then(|ca| {
            ca.with_context(|| format!("{CA_CERT} is missing; run `dcn standalone init` first"))
        })
    }

    /// The new CA of a rotation, when both of its files are there (a
    /// rotation cut off between them starts again).
    pub fn next(&self) -> Result<Option<CertificateAuthority>> {
        load(self.files, NEXT_CERT, NEXT_KEY)
    }

    pub fn rotation(&self) -> Result<Rotation> {
        let next = self.files.exists(NEXT_CERT)? && self.files.exists(NEXT_KEY)?;
        Ok(match (next, self.files.exists(FINISHING)?) {
            (true, true) => Rotation::Finishing,
            (true, false) => Rotation::Overlap,
            // A finish cut off after the new CA took its place.
            (false, _) => Rotation::None,
        })
    }

    /// The CA that signs the control plane's certificates now: the new one
    /// from the moment `--finish` starts.
    pub fn leaf_signer(&self) -> Result<CertificateAuthority> {
        if self.rotation()? == Rotation::Finishing
            && let Some(next) = self.next()?
        {
            return Ok(next);
        }
        self.current()
    }

    /// The CA that signs new join bundles, which pin it: the new one as
    /// soon as a rotation starts, so no bundle made during it goes stale.
    pub fn bundle_signer(&self) -> Result<CertificateAuthority> {
        if self.rotation()? != Rotation::None
            && let Some(next) = self.next()?
        {
            return Ok(next);
        }
        self.current()
    }

    /// Every CA certificate that clients of this control plane trust now
    /// (PEM), the newest first.
    pub fn trusted(&self) -> Result<Vec<String>> {
        let mut out = Vec::new();
        if self.rotation()? != Rotation::None
            && let Some(next) = self.files.read_string(NEXT_CERT)?
        {
            out.push(next);
        }
        let current = self
            .files
            .read_string(CA_CERT)?
            .with_context(|| format!("{CA_CERT} is missing; run `dcn standalone init` first"))?;
        if !out.contains(&current) {
            out.push(current);
        }
        Ok(out)
    }

    /// [`Self::trusted`] as one PEM text.
    pub fn trusted_pem(&self) -> Result<String> {
        Ok(crate::pki::join_pem(&self.trusted()?))
    }

    /// The pins of [`Self::trusted`].
    pub fn trusted_pins(&self) -> Result<Vec<Pin>> {
        self.trusted()?
            .iter()
            .map(|p| Pin::of_cert_pem(p))
            .collect()
    }

    /// Start a rotation: a new CA, valid for `validity`, trusted from now
    /// on beside the current one. A rotation under way is kept.
    pub fn start_rotation(&self, validity: time::Duration) -> Result<(Pin, bool)> {
        if let Some(next) = self.next()? {
            return Ok((next.pin(), false));
        }
        let stamp = crate::timefmt::rfc3339(std::time::SystemTime::now());
        let ca = CertificateAuthority::generate_for(&format!("dcn CA {stamp}"), validity)?;
        // The key first: a rotation is there only once both files are.
        self.files.write(
            NEXT_KEY,
            ca.key_pem().expose().as_bytes(),
            &FileSpec::secret(),
        )?;
        self.files
            .write(NEXT_CERT, ca.cert_pem().as_bytes(), &FileSpec::secret())?;
        Ok((ca.pin(), true))
    }

    /// Mark the start of `--finish`: from here on the new CA signs.
    pub fn begin_finish(&self) -> Result<()> {
        match self.rotation()? {
            Rotation::None => bail!("no CA rotation is under way: run `dcn ca rotate` first"),
            Rotation::Overlap => {
                self.files
                    .write(FINISHING, b"finishing\n", &FileSpec::secret())?;
                Ok(())
            }
            Rotation::Finishing => Ok(()),
        }
    }

    /// The last step of `--finish`: the new CA takes the old one's place;
    /// the old certificate is kept in `retired/`, its key deleted. Returns
    /// the retired CA's pin (none when an earlier, cut-off run got there).
    pub fn complete_finish(&self) -> Result<Option<Pin>> {
        let files = self.files;
        let mut retired = None;
        if self.rotation()? == Rotation::Finishing {
            let next = self
                .next()?
                .context("the new CA vanished during --finish")?;
            let old = files.read_string(CA_CERT)?.unwrap_or_default();
            if !old.is_empty() && old != next.cert_pem() {
                let info = CertInfo::from_pem(&old).context("reading the retiring CA")?;
                files.ensure_dir(RETIRED_DIR, &FileSpec::private_dir())?;
                files.write(
                    format!("{RETIRED_DIR}/ca-{}.crt", info.serial),
                    old.as_bytes(),
                    &FileSpec::secret(),
                )?;
                retired = Some(Pin::of_cert_pem(&old)?);
            }
            // Key, then certificate; the new CA's own files go only once
            // both are written (until then the marker says which signs).
            files.write(
                CA_KEY,
                next.key_pem().expose().as_bytes(),
                &FileSpec::secret(),
            )?;
            files.write(CA_CERT, next.cert_pem().as_bytes(), &FileSpec::secret())?;
            files.remove(NEXT_KEY)?;
            files.remove(NEXT_CERT)?;
        } else if !files.exists(NEXT_KEY)? {
            // Cut off between the two removals.
            files.remove(NEXT_CERT)?;
        }
        files.remove(FINISHING)?;
        Ok(retired)
    }
}

/// A CA from its certificate and key files; `None` when either is missing.
fn load(files: &Files, cert: &str, key: &str) -> Result<Option<CertificateAuthority>> {
    let (Some(c), Some(k)) = (files.read_string(cert)?, files.read_secret(key)?) else {
        return Ok(None);
    };
    CertificateAuthority::load(&c, &Secret::new(k))
        .with_context(|| format!("reading the CA in {cert} and {key}"))
        .map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state() -> (tempfile::TempDir, Files, CertificateAuthority) {
        let root = tempfile::tempdir().unwrap();
        let files = Files::new(root.path(), false);
        let ca = CertificateAuthority::generate("authority test CA").unwrap();
        files
            .write(CA_CERT, ca.cert_pem().as_bytes(), &FileSpec::secret())
            .unwrap();
        files
            .write(
                CA_KEY,
                ca.key_pem().expose().as_bytes(),
                &FileSpec::secret(),
            )
            .unwrap();
        (root, files, ca)
    }

    #[test]
    fn a_rotation_trusts_both_signs_bundles_with_the_new_and_leaves_with_the_old_until_finish() {
        let (_root, files, old) = state();
        let a = Authorities::new(&files);
        assert_eq!(a.rotation().unwrap(), Rotation::None);
        assert_eq!(a.trusted().unwrap().len(), 1);
        let (pin, created) = a.start_rotation(time::Duration::days(30)).unwrap();
        assert!(created);
        assert_eq!(
            a.start_rotation(time::Duration::days(30)).unwrap(),
            (pin.clone(), false)
        );
        assert_eq!(a.rotation().unwrap(), Rotation::Overlap);
        assert_eq!(a.trusted_pins().unwrap(), [pin.clone(), old.pin()]);
        assert_eq!(a.bundle_signer().unwrap().pin(), pin);
        assert_eq!(a.leaf_signer().unwrap().pin(), old.pin());

        a.begin_finish().unwrap();
        assert_eq!(a.rotation().unwrap(), Rotation::Finishing);
        assert_eq!(a.leaf_signer().unwrap().pin(), pin);
        // Both stay trusted until the end.
        assert_eq!(a.trusted_pins().unwrap().len(), 2);
        assert_eq!(a.complete_finish().unwrap(), Some(old.pin()));
        assert_eq!(a.rotation().unwrap(), Rotation::None);
        assert_eq!(a.current().unwrap().pin(), pin);
        assert_eq!(a.trusted_pins().unwrap(), [pin]);
        let retired = std::fs::read_dir(files.host_path(RETIRED_DIR).unwrap())
            .unwrap()
            .count();
        assert_eq!(retired, 1);
        assert!(!files.exists(NEXT_KEY).unwrap() && !files.exists(FINISHING).unwrap());
    }

    #[test]
    fn a_finish_cut_off_at_any_write_is_completed_by_running_it_again() {
        for cut in 0..4 {
            let (_root, files, old) = state();
            let a = Authorities::new(&files);
            let (pin, _) = a.start_rotation(time::Duration::days(30)).unwrap();
            a.begin_finish().unwrap();
            let next = a.next().unwrap().unwrap();
            // Where the power went: after the key, after the certificate,
            // after the new CA's key went, after both went.
            files
                .write(
                    CA_KEY,
                    next.key_pem().expose().as_bytes(),
                    &FileSpec::secret(),
                )
                .unwrap();
            if cut >= 1 {
                files
                    .write(CA_CERT, next.cert_pem().as_bytes(), &FileSpec::secret())
                    .unwrap();
            }
            if cut >= 2 {
                files.remove(NEXT_KEY).unwrap();
            }
            if cut >= 3 {
                files.remove(NEXT_CERT).unwrap();
            }
            // Leaves are signed by the new CA whatever the cut.
            assert_eq!(a.leaf_signer().unwrap().pin(), pin, "cut {cut}");
            a.complete_finish().unwrap();
            assert_eq!(a.rotation().unwrap(), Rotation::None, "cut {cut}");
            assert_eq!(a.current().unwrap().pin(), pin, "cut {cut}");
            assert_eq!(
                a.trusted_pins().unwrap(),
                std::slice::from_ref(&pin),
                "cut {cut}"
            );
            assert_ne!(pin, old.pin());
            for f in [NEXT_CERT, NEXT_KEY, FINISHING] {
                assert!(!files.exists(f).unwrap(), "cut {cut}: {f} left");
            }
        }
    }
}
