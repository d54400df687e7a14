//! Reading a bundle: hostile input until every check has passed. The checks
//! run in the order of `docs/bundle-format.md` ("Verification"), chosen so
//! the first refusal is the most useful one: structure, then format
//! version, then the manifest's fields, then the CA and its pin, then the
//! signature and digests, and the expiry last.

use super::archive::{self, RawMembers};
use super::error::BundleError;
use super::limits::MAX_COMPRESSED_SIZE;
use super::manifest::Manifest;
use super::token::JoinToken;
use super::{CA_CERT, FORMAT_VERSION, MANIFEST, SIGNATURE, TOKEN};
use crate::config::ConfigError;
use crate::host::read::{self, ReadSpec};
use crate::pki::{self, CertInfo, Pin};
use crate::recipes::Recipes;
use crate::terminal_text::sanitize;
use crate::timefmt;
use crate::types::endpoints::Sha256Digest;
use base64::Engine;
use std::path::Path;
use std::time::{Duration, SystemTime};

/// How to read a bundle.
#[derive(Debug, Clone)]
pub struct ReadOptions {
    /// The time to check `notAfter` against.
    pub now: SystemTime,
    /// The CA pin the operator gave (`--ca-pin`); `None` trusts the bundle's
    /// CA on first use.
    pub ca_pin: Option<Pin>,
    /// Refuse an expired bundle. `dcn bundle inspect` turns this off to show
    /// an expired bundle, marked expired.
    pub check_expiry: bool,
}

impl ReadOptions {
    /// Now, no pin, expiry checked.
    pub fn new() -> ReadOptions {
        ReadOptions {
            now: SystemTime::now(),
            ca_pin: None,
            check_expiry: true,
        }
    }

    pub fn with_pin(mut self, pin: Option<Pin>) -> ReadOptions {
        self.ca_pin = pin;
        self
    }
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions::new()
    }
}

/// A bundle whose every check passed.
#[derive(Debug, Clone, PartialEq)]
pub struct VerifiedBundle {
    pub manifest: Manifest,
    pub ca_cert_pem: String,
    pub token: JoinToken,
    /// The pin of `ca_cert_pem`.
    pub ca_pin: Pin,
    /// Whether `ca_pin` was compared with a pin the operator gave. When
    /// false the CA was trusted on first use, and the CLI should say so.
    pub pin_checked: bool,
}

impl VerifiedBundle {
    /// Every CA the host trusts (PEM): `ca.crt`, then the manifest's
    /// `alsoTrusted` (during a CA rotation, the CA being replaced).
    pub fn trusted_pem(&self) -> String {
        let mut all = vec![self.ca_cert_pem.clone()];
        all.extend(self.manifest.also_trusted.iter().cloned());
        crate::pki::join_pem(&all)
    }

    /// How long until the bundle expires; zero once it has.
    pub fn expires_in(&self, now: SystemTime) -> Duration {
        self.manifest
            .not_after
            .duration_since(now)
            .unwrap_or_default()
    }

    /// Whether `notAfter` has passed at `now`.
    pub fn is_expired(&self, now: SystemTime) -> bool {
        now > self.manifest.not_after
    }
}

/// Read and verify a bundle from `input`. Nothing is written anywhere.
pub fn read_bundle(
    recipes: &Recipes,
    input: impl std::io::Read,
    opts: &ReadOptions,
) -> Result<VerifiedBundle, BundleError> {
    let raw = archive::read_members(input)?;
    let manifest = parse_manifest(recipes, &raw.manifest)?;
    let ca_cert_pem = text(CA_CERT, &raw.ca_cert)?.to_string();
    let ca_info = check_ca(&ca_cert_pem, opts.now)?;
    let ca_pin = Pin::of_spki_der(&ca_info.spki_der);
    if let Some(expected) = &opts.ca_pin
        && *expected != ca_pin
    {
        return Err(BundleError::PinMismatch {
            expected: expected.clone(),
            found: ca_pin,
        });
    }
    check_signature(&ca_cert_pem, &raw)?;
    check_digests(&manifest, &raw)?;
    let token = parse_token(&raw.token, &manifest)?;
    if opts.check_expiry && opts.now > manifest.not_after {
        return Err(BundleError::Expired {
            site: manifest.site.to_string(),
            not_after: timefmt::rfc3339(manifest.not_after),
            ago: timefmt::rough(
                opts.now
                    .duration_since(manifest.not_after)
                    .unwrap_or_default(),
            ),
            now: timefmt::rfc3339(opts.now),
        });
    }
    Ok(VerifiedBundle {
        manifest,
        ca_cert_pem,
        token,
        ca_pin,
        pin_checked: opts.ca_pin.is_some(),
    })
}

/// Read and verify the bundle file at `path`.
pub fn read_bundle_file(
    recipes: &Recipes,
    path: &Path,
    opts: &ReadOptions,
) -> Result<VerifiedBundle, BundleError> {
    let spec = ReadSpec::up_to(MAX_COMPRESSED_SIZE);
    let file = read::open(path, &spec).map_err(|error| BundleError::Open { error })?;
    read_bundle(recipes, file, opts)
}

fn text<'a>(member: &str, bytes: &'a [u8]) -> Result<&'a str, BundleError> {
    std::str::from_utf8(bytes)
        .map_err(|e| BundleError::bad_member(member, format!("it is not UTF-8 text ({e})")))
}

/// The format version first, so a newer bundle is refused as newer rather
/// than with a list of fields this dcn does not know; then every field.
/// (Public for the manifest fuzz target.)
pub fn parse_manifest(recipes: &Recipes, bytes: &[u8]) -> Result<Manifest, BundleError> {
    #[derive(serde::Deserialize)]
    struct Header {
        #[serde(rename = "formatVersion")]
        format_version: Option<serde_yaml::Value>,
    }
    let yaml = text(MANIFEST, bytes)?;
    // Nesting and repeated keys are bounded before the first parse.
    crate::config::check_limits(yaml, MANIFEST).map_err(BundleError::Manifest)?;
    // A syntax error is reported, with its line, by the full parse below.
    if let Ok(Header {
        format_version: Some(v),
    }) = serde_yaml::from_str::<Header>(yaml)
        && v.is_number()
        && v.as_u64() != Some(FORMAT_VERSION.into())
    {
        if let Some(found) = v.as_u64().filter(|&n| n < FORMAT_VERSION.into()) {
            return Err(BundleError::OlderVersion { found });
        }
        let found = serde_yaml::to_string(&v)
            .unwrap_or_default()
            .trim()
            .to_string();
        return Err(BundleError::UnsupportedVersion { found });
    }
    let manifest: Manifest = crate::config::parse(yaml, MANIFEST).map_err(BundleError::Manifest)?;
    manifest.validate(recipes).map_err(|p| {
        // `hosts[0].names` is the path `hosts`, `0`, `names`.
        let dotted = p.path.replace('[', ".").replace(']', "");
        let path: Vec<&str> = dotted.split('.').collect();
        BundleError::Manifest(ConfigError::located(yaml, MANIFEST, &path, p.message))
    })?;
    Ok(manifest)
}

/// `ca.crt` must be exactly one PEM certificate, a CA's that may sign
/// certificates, and valid at `now`. Subjects are sanitised: they go into
/// messages for a terminal.
fn check_ca(pem: &str, now: SystemTime) -> Result<CertInfo, BundleError> {
    let blocks = pem.matches("-----BEGIN ").count();
    if blocks != 1 {
        let problem =
            format!("it must hold exactly one PEM certificate, but holds {blocks} PEM blocks");
        return Err(BundleError::bad_member(CA_CERT, problem));
    }
    let info =
        CertInfo::from_pem(pem).map_err(|e| BundleError::bad_member(CA_CERT, format!("{e:#}")))?;
    let subject = sanitize(&info.subject).into_owned();
    let not_ca = |reason: &str| BundleError::NotCa {
        subject: subject.clone(),
        reason: reason.to_string(),
    };
    if !info.is_ca {
        return Err(not_ca("its basic constraints do not say CA:TRUE"));
    }
    if !info.key_cert_sign {
        return Err(not_ca(
            "its key usage does not allow signing certificates (keyCertSign)",
        ));
    }
    let now_secs = timefmt::unix_seconds(now);
    if now_secs < info.not_before.unix_timestamp() {
        return Err(BundleError::CaNotYetValid {
            subject,
            not_before: timefmt::rfc3339_datetime(info.not_before),
            now: timefmt::rfc3339(now),
        });
    }
    if now_secs > info.not_after.unix_timestamp() {
        return Err(BundleError::CaExpired {
            subject,
            not_after: timefmt::rfc3339_datetime(info.not_after),
            now: timefmt::rfc3339(now),
        });
    }
    Ok(info)
}

fn check_signature(ca_cert_pem: &str, raw: &RawMembers) -> Result<(), BundleError> {
    let sig_text = text(SIGNATURE, &raw.signature)?;
    let line = sig_text.strip_suffix('\n').unwrap_or(sig_text);
    let signature = base64::engine::general_purpose::STANDARD
        .decode(line)
        .map_err(|e| {
            BundleError::bad_member(SIGNATURE, format!("it is not one line of base64 ({e})"))
        })?;
    pki::verify_signature(ca_cert_pem, &raw.manifest, &signature)
        .map_err(|_| BundleError::BadSignature)
}

fn check_digests(manifest: &Manifest, raw: &RawMembers) -> Result<(), BundleError> {
    for (member, bytes) in [(CA_CERT, &raw.ca_cert), (TOKEN, &raw.token)] {
        let expected = manifest.members[member];
        let found = Sha256Digest::of(bytes);
        if found != expected {
            return Err(BundleError::DigestMismatch {
                member: member.to_string(),
                expected: expected.to_string(),
                found: found.to_string(),
            });
        }
    }
    Ok(())
}

fn parse_token(bytes: &[u8], manifest: &Manifest) -> Result<JoinToken, BundleError> {
    let t = text(TOKEN, bytes)?;
    let token: JoinToken = t
        .strip_suffix('\n')
        .unwrap_or(t)
        .parse()
        .map_err(|e: super::token::TokenError| BundleError::bad_member(TOKEN, e.to_string()))?;
    if token.id != manifest.token_id {
        let problem = format!(
            "its id {} is not the manifest's tokenId {}",
            token.id, manifest.token_id
        );
        return Err(BundleError::bad_member(TOKEN, problem));
    }
    Ok(token)
}
