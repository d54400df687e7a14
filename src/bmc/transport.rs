//! The HTTP layer under the Redfish client, where a hostile BMC (or
//! whatever answers at its address) is kept from taking the credentials or
//! the memory: redirects are followed only within the exact origin the
//! operator gave (scheme, host and port: a redirect from https to http on
//! the same host and port would otherwise carry the Basic-auth header over
//! plain HTTP), and every answer's body is read up to a cap and a deadline.

use super::deadline::Deadline;
use anyhow::{Result, anyhow};
use reqwest::Url;
use std::io::Read;

/// Largest answer read from a BMC. Redfish resources are a few KiB (a
/// ComputerSystem with every OEM extension stays well under 1 MiB).
pub const MAX_BODY: usize = 4 * 1024 * 1024;

/// Redirects followed for one request (BMCs redirect at most once, e.g.
/// `/redfish/v1` to `/redfish/v1/`).
pub const MAX_REDIRECTS: usize = 5;

/// Why a redirect was not followed.
#[derive(Debug, thiserror::Error)]
pub enum RedirectRefused {
    #[error("redirected to {to}, outside {origin}")]
    OtherOrigin { to: String, origin: String },
    #[error("redirected more than {MAX_REDIRECTS} times")]
    TooMany,
}

/// Follow a redirect only to `base`'s own origin, and at most
/// [`MAX_REDIRECTS`] times. The refusal happens before anything is sent to
/// the new address.
pub fn redirect_policy(base: &Url) -> reqwest::redirect::Policy {
    let origin = base.origin();
    let shown = base.as_str().to_string();
    reqwest::redirect::Policy::custom(move |attempt| {
        if attempt.url().origin() != origin {
            let to = attempt.url().origin().ascii_serialization();
            attempt.error(RedirectRefused::OtherOrigin {
                to,
                origin: shown.clone(),
            })
        } else if attempt.previous().len() > MAX_REDIRECTS {
            attempt.error(RedirectRefused::TooMany)
        } else {
            attempt.follow()
        }
    })
}

/// The redirect refusal inside a reqwest error, if that is what it is.
pub fn redirect_refusal(e: &reqwest::Error) -> Option<&RedirectRefused> {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        if let Some(r) = err.downcast_ref::<RedirectRefused>() {
            return Some(r);
        }
        cur = err.source();
    }
    None
}

/// Why a body could not be read.
#[derive(Debug)]
pub enum BodyError {
    /// The body is (or says it is) larger than the cap.
    TooLarge {
        announced: Option<u64>,
    },
    /// Not all of it had come by the deadline.
    TimedOut {
        received: usize,
    },
    /// The transfer failed.
    Http(reqwest::Error),
    Io(std::io::Error),
}

/// Read a body of at most `cap` bytes by `deadline`: refused at once when
/// its Content-Length says more, and stopped as soon as it goes over (an
/// endless body costs `cap` bytes, not the time limit) or the deadline
/// passes (a body that trickles in costs the time limit, not forever).
/// Each read is bounded by reqwest's timeout of the request, which the
/// caller sets to the time left.
pub fn read_capped(
    mut resp: reqwest::blocking::Response,
    cap: usize,
    deadline: &Deadline,
) -> Result<Vec<u8>, BodyError> {
    let announced = resp.content_length();
    if announced.is_some_and(|n| n > cap as u64) {
        return Err(BodyError::TooLarge { announced });
    }
    let mut body = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match resp.read(&mut buf) {
            Ok(0) => return Ok(body),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) if is_timeout(&e) => {
                return Err(BodyError::TimedOut {
                    received: body.len(),
                });
            }
            Err(e) => {
                let kind = e.kind();
                return Err(
                    match e.into_inner().map(|i| i.downcast::<reqwest::Error>()) {
                        Some(Ok(http)) => BodyError::Http(*http),
                        Some(Err(other)) => BodyError::Io(std::io::Error::new(kind, other)),
                        None => BodyError::Io(kind.into()),
                    },
                );
            }
        };
        body.extend_from_slice(&buf[..n]);
        if body.len() > cap {
            return Err(BodyError::TooLarge { announced });
        }
        if deadline.passed() {
            return Err(BodyError::TimedOut {
                received: body.len(),
            });
        }
    }
}

/// Whether a failed read is a timeout (reqwest's own, or the socket's).
fn is_timeout(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::TimedOut
        || e.get_ref()
            .and_then(|i| i.downcast_ref::<reqwest::Error>())
            .is_some_and(|r| r.is_timeout())
}

/// Why a BMC address is refused. Each caller words it for where the address
/// came from (`--bmc`, an inventory's `bmc.endpoint`); none of them echoes
/// the address, which may hold a password.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OriginError {
    /// Not a URL (the parser's reason).
    Syntax(String),
    /// A user or password in the URL.
    Credentials,
    /// A scheme other than https or http.
    Scheme(String),
    NoHost,
}

/// The origin of a BMC address: `10.0.0.5` → `https://10.0.0.5/`; a path
/// is dropped (the client follows links from `/redfish/v1/`).
pub fn origin(given: &str) -> Result<Url, OriginError> {
    let with_scheme = if given.contains("://") {
        given.to_string()
    } else {
        format!("https://{given}")
    };
    let url = Url::parse(&with_scheme).map_err(|e| OriginError::Syntax(e.to_string()))?;
    if !url.username().is_empty() || url.password().is_some() {
        return Err(OriginError::Credentials);
    }
    if !matches!(url.scheme(), "https" | "http") {
        return Err(OriginError::Scheme(url.scheme().to_string()));
    }
    let host = url.host_str().ok_or(OriginError::NoHost)?;
    let mut base = Url::parse(&format!("{}://{host}/", url.scheme()))
        .map_err(|e| OriginError::Syntax(e.to_string()))?;
    base.set_port(url.port()).ok();
    Ok(base)
}

/// The origin of an operator's `--bmc` address (see [`origin`]).
pub(crate) fn base_url(given: &str) -> Result<Url> {
    origin(given).map_err(|e| match e {
        OriginError::Syntax(why) => anyhow!("--bmc must look like https://HOST[:PORT] ({why})"),
        // Not echoing the URL: it holds credentials.
        OriginError::Credentials => anyhow!(
            "--bmc must not carry credentials: give the user with --username and the password in --password-file or DCN_BMC_PASSWORD"
        ),
        OriginError::Scheme(s) => anyhow!("--bmc must be an https:// URL, not {s}://"),
        OriginError::NoHost => anyhow!("--bmc has no host"),
    })
}

/// The error for an answer over [`MAX_BODY`].
pub fn too_large(base: &Url, method: &str, path: &str, announced: Option<u64>) -> String {
    let said = announced
        .map(|n| format!(" (it announced {})", size(n)))
        .unwrap_or_default();
    format!(
        "the answer of the BMC at {base} to {method} {path} is larger than {}{said}; dcn stopped reading it. Redfish resources are a few KiB: check that --bmc is the BMC's Redfish address",
        size(MAX_BODY as u64)
    )
}

/// The error for a redirect not followed.
pub fn redirect_refused(r: &RedirectRefused, base: &Url, method: &str, path: &str) -> String {
    match r {
        RedirectRefused::OtherOrigin { to, .. } if to.starts_with("http:") => format!(
            "refusing to follow the BMC's redirect of {method} {path} to plain HTTP ({to}): the password would travel in clear, so nothing was sent there. dcn sends the BMC credentials only to {base}; a BMC that redirects to HTTP is misconfigured or impersonated: check its Redfish settings, and that --bmc and --bmc-pin name the BMC"
        ),
        RedirectRefused::OtherOrigin { to, .. } => format!(
            "refusing to follow the BMC's redirect of {method} {path} to {to}: dcn sends the BMC credentials only to {base}, so nothing was sent to {to}. If {to} really is this BMC's Redfish service, pass it as --bmc"
        ),
        RedirectRefused::TooMany => format!(
            "the BMC at {base} redirected {method} {path} more than {MAX_REDIRECTS} times; dcn stopped following"
        ),
    }
}

/// A size for messages: `4 MiB`, `400000000 bytes`.
pub fn size(n: u64) -> String {
    if n >= 1024 * 1024 && n.is_multiple_of(1024 * 1024) {
        format!("{} MiB", n / (1024 * 1024))
    } else {
        format!("{n} bytes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_urls() {
        assert_eq!(base_url("10.0.0.5").unwrap().as_str(), "https://10.0.0.5/");
        assert_eq!(
            base_url("https://bmc.example:8443/redfish/v1")
                .unwrap()
                .as_str(),
            "https://bmc.example:8443/"
        );
        assert_eq!(
            base_url("https://[fd00::5]").unwrap().as_str(),
            "https://[fd00::5]/"
        );
        let err = base_url("https://root:calvin@10.0.0.5")
            .unwrap_err()
            .to_string();
        assert!(!err.contains("calvin"), "{err}");
        assert!(base_url("ftp://10.0.0.5").is_err());
    }

    #[test]
    fn sizes_read_plainly() {
        assert_eq!(size(MAX_BODY as u64), "4 MiB");
        assert_eq!(size(400_000_000), "400000000 bytes");
    }
}
