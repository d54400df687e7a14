//! The edge's client of the join service: HTTPS that trusts only the CA
//! from the bundle (itself checked against the pin), with refusals kept
//! apart from connection failures, since only the latter are retried.

use crate::wire::*;
use anyhow::{Context, Result};
use std::time::Duration;

/// The join service said no.
#[derive(Debug, thiserror::Error)]
#[error("the control plane refused the join ({}): {}", .0.error, .0.message)]
pub struct Refused(pub ErrorReply);

/// The join service presented a certificate that no CA this host trusts
/// issued. Trying again does not help: the control plane moved to a new CA
/// while this host was away (or with a bundle made before it), or the
/// endpoint is not this host's control plane.
#[derive(Debug, thiserror::Error)]
#[error(
    "the join service's certificate is not issued by a CA this host trusts ({0}): if the control plane's CA was rotated since, join with a new bundle (`dcn bundle export`), or on a joined node run `dcn node trust-ca --ca-pin PIN` with the pin `dcn ca status` prints on the control plane"
)]
pub struct Untrusted(pub String);

/// `send`, with a refused server certificate as [`Untrusted`].
trait SendChecked {
    fn send_checked(self) -> Result<reqwest::blocking::Response>;
}

impl SendChecked for reqwest::blocking::RequestBuilder {
    fn send_checked(self) -> Result<reqwest::blocking::Response> {
        self.send().map_err(|e| match certificate_error(&e) {
            Some(why) => Untrusted(why).into(),
            None => e.into(),
        })
    }
}

/// The rustls certificate error somewhere in `e`'s sources, in words.
/// (An `io::Error` wrapping another error hides it from `source()`: its
/// inner error is followed instead.)
fn certificate_error(e: &(dyn std::error::Error + 'static)) -> Option<String> {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        if let Some(rustls::Error::InvalidCertificate(c)) = err.downcast_ref::<rustls::Error>() {
            return Some(format!("{c:?}"));
        }
        cur = match err
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
        {
            Some(inner) => Some(inner as &(dyn std::error::Error + 'static)),
            None => err.source(),
        };
    }
    None
}

pub struct JoinClient {
    base: String,
    http: reqwest::blocking::Client,
}

impl JoinClient {
    pub fn new(join_endpoint: &str, ca_pem: &str) -> Result<JoinClient> {
        Self::from_address(join_endpoint, ca_pem, None)
    }

    /// A client whose connections leave from `local` when given (a
    /// simulated host of the scale harness, on its carrier).
    pub fn from_address(
        join_endpoint: &str,
        ca_pem: &str,
        local: Option<std::net::IpAddr>,
    ) -> Result<JoinClient> {
        Ok(JoinClient {
            base: join_endpoint.trim_end_matches('/').to_string(),
            http: crate::tls::http_client_from(Some(ca_pem), Duration::from_secs(60), local)?,
        })
    }

    pub fn endpoint(&self) -> &str {
        &self.base
    }

    fn decode<T: serde::de::DeserializeOwned>(
        resp: reqwest::blocking::Response,
        what: &str,
    ) -> Result<T> {
        let status = resp.status();
        let body = resp
            .text()
            .with_context(|| format!("reading the reply to {what}"))?;
        if status.is_success() {
            return serde_json::from_str(&body)
                .with_context(|| format!("the reply to {what} is not what dcn expects"));
        }
        match serde_json::from_str::<ErrorReply>(&body) {
            Ok(e) => Err(Refused(e).into()),
            Err(_) => anyhow::bail!(
                "{what}: the join service answered {status}: {}",
                crate::terminal_text::head(&body, 200)
            ),
        }
    }

    /// The control plane's clock (and a sign of life).
    pub fn health(&self) -> Result<Health> {
        let resp = self
            .http
            .get(format!("{}{HEALTH_PATH}", self.base))
            .timeout(Duration::from_secs(10))
            .send_checked()
            .with_context(|| format!("connecting to the join service at {}", self.base))?;
        Self::decode(resp, "the health check")
    }

    /// A fresh challenge to sign with the node key (a re-join must).
    pub fn challenge(&self) -> Result<Challenge> {
        let resp = self
            .http
            .post(format!("{}{CHALLENGE_PATH}", self.base))
            .timeout(Duration::from_secs(10))
            .send_checked()
            .with_context(|| format!("asking the join service at {} for a challenge", self.base))?;
        self.known(&resp, CHALLENGE_PATH)?;
        Self::decode(resp, "the challenge request")
    }

    /// Join with `req`, proving first that this host holds `key` now.
    pub fn join_with_proof(
        &self,
        req: &JoinRequest,
        key: &rcgen::KeyPair,
        token_id: &str,
    ) -> Result<JoinReply> {
        let challenge = self.challenge()?;
        let mut req = req.clone();
        req.proof = Some(prove(key, &challenge, &req.hostname, token_id)?);
        self.join(&req)
    }

    pub fn join(&self, req: &JoinRequest) -> Result<JoinReply> {
        let resp = self
            .http
            .post(format!("{}{JOIN_PATH}", self.base))
            .json(req)
            .send_checked()
            .with_context(|| format!("sending the join request to {}", self.base))?;
        self.known(&resp, JOIN_PATH)?;
        Self::decode(resp, "the join request")
    }

    /// A join service older than `path` knows no such endpoint.
    fn known(&self, resp: &reqwest::blocking::Response, path: &str) -> Result<()> {
        if resp.status() == reqwest::StatusCode::NOT_FOUND {
            anyhow::bail!(
                "the join service at {} does not know {path}: the control plane runs an older dcn than this host ({}); upgrade dcn on the control plane, or join with the dcn version it runs",
                self.base,
                env!("CARGO_PKG_VERSION")
            );
        }
        Ok(())
    }

    /// Report a phase (10 s at most), with the join token before the host
    /// joined and its node secret after. The report is cut to what the
    /// service accepts first ([`ProgressReport::bounded`]).
    pub fn report(&self, credential: &str, report: &ProgressReport) -> Result<ProgressAck> {
        let resp = self
            .http
            .post(format!("{}{PROGRESS_PATH}", self.base))
            .bearer_auth(credential)
            .json(&report.clone().bounded())
            .timeout(Duration::from_secs(10))
            .send_checked()
            .with_context(|| format!("reporting progress to {}", self.base))?;
        Self::decode(resp, "the progress report").map_err(|e| match e.downcast::<Refused>() {
            Ok(Refused(r)) => anyhow::anyhow!(
                "the join service refused the report ({}): {}",
                r.error,
                r.message
            ),
            Err(e) => e,
        })
    }

    pub fn node_status(&self, hostname: &str, node_secret: &str) -> Result<NodeStatus> {
        let resp = self
            .http
            .get(format!("{}{NODES_PATH}{hostname}", self.base))
            .bearer_auth(node_secret)
            .send_checked()
            .with_context(|| {
                format!("asking the join service at {} about {hostname}", self.base)
            })?;
        Self::decode(resp, "the node status request")
    }

    /// This node's resolved site config (30 s at most).
    pub fn node_config(&self, hostname: &str, node_secret: &str) -> Result<NodeConfigReply> {
        let resp = self
            .http
            .get(format!(
                "{}{NODES_PATH}{hostname}{CONFIG_SUFFIX}",
                self.base
            ))
            .bearer_auth(node_secret)
            .timeout(Duration::from_secs(30))
            .send_checked()
            .with_context(|| format!("fetching the site config from {}", self.base))?;
        Self::decode(resp, "the config request")
    }

    /// Report the CAs this node trusts, and send a CSR when its
    /// certificate is due (30 s at most).
    pub fn certificate(
        &self,
        hostname: &str,
        node_secret: &str,
        check: &CertificateCheck,
    ) -> Result<CertificateReply> {
        let resp = self
            .http
            .post(format!(
                "{}{NODES_PATH}{hostname}{CERTIFICATE_SUFFIX}",
                self.base
            ))
            .bearer_auth(node_secret)
            .json(check)
            .timeout(Duration::from_secs(30))
            .send_checked()
            .with_context(|| format!("checking this node's certificate with {}", self.base))?;
        Self::decode(resp, "the certificate check")
    }

    /// Say how this node's upgrade goes and get its order (30 s at most);
    /// `None` from a control plane whose dcn has no upgrades (it answers
    /// 404): a node then has nothing to do.
    pub fn upgrade_check(
        &self,
        hostname: &str,
        node_secret: &str,
        check: &UpgradeCheck,
    ) -> Result<Option<UpgradeOrder>> {
        let resp = self
            .http
            .post(format!(
                "{}{NODES_PATH}{hostname}{UPGRADE_SUFFIX}",
                self.base
            ))
            .bearer_auth(node_secret)
            .json(&check.clone().bounded())
            .timeout(Duration::from_secs(30))
            .send_checked()
            .with_context(|| format!("asking {} for this node's upgrade orders", self.base))?;
        if resp.status() == reqwest::StatusCode::NOT_FOUND {
            return Ok(None);
        }
        Self::decode(resp, "the upgrade check").map(Some)
    }

    /// A piece of a release file from byte `offset` (at most
    /// [`RELEASE_CHUNK`] bytes, 120 s at most): its bytes and the file's
    /// whole size.
    pub fn release_piece(
        &self,
        hostname: &str,
        node_secret: &str,
        release: &str,
        file: &str,
        offset: u64,
    ) -> Result<(Vec<u8>, u64)> {
        let what = format!("{file} of release {release}");
        let tail = format!("{RELEASE_SEGMENT}{release}/{file}");
        self.node_piece(hostname, node_secret, &tail, &what, offset)
    }

    /// A piece of an image file this node's site caches, as
    /// [`Self::release_piece`].
    pub fn image_piece(
        &self,
        hostname: &str,
        node_secret: &str,
        image: &str,
        offset: u64,
    ) -> Result<(Vec<u8>, u64)> {
        let what = format!("image {image}");
        let tail = format!("{IMAGE_SEGMENT}{image}");
        self.node_piece(hostname, node_secret, &tail, &what, offset)
    }

    /// A piece of the node's file at `{NODES_PATH}{hostname}{tail}`.
    fn node_piece(
        &self,
        hostname: &str,
        node_secret: &str,
        tail: &str,
        what: &str,
        offset: u64,
    ) -> Result<(Vec<u8>, u64)> {
        use std::io::Read;
        let resp = self
            .http
            .get(format!("{}{NODES_PATH}{hostname}{tail}", self.base))
            .bearer_auth(node_secret)
            .header("Range", format!("bytes={offset}-"))
            .timeout(Duration::from_secs(120))
            .send_checked()
            .with_context(|| format!("fetching {what} from {}", self.base))?;
        let status = resp.status();
        if !status.is_success() {
            return Self::decode::<serde_json::Value>(resp, &format!("the request for {what}"))
                .and_then(|_| anyhow::bail!("{what}: the join service answered {status}"));
        }
        let size = match status.as_u16() {
            206 => (resp.headers().get("Content-Range"))
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.rsplit_once('/'))
                .and_then(|(range, size)| {
                    let start = range.strip_prefix("bytes ")?.split_once('-')?.0;
                    (start.parse::<u64>().ok()? == offset).then_some(size)
                })
                .and_then(|s| s.parse::<u64>().ok())
                .with_context(|| {
                    format!("{what}: the join service's Content-Range is not the range asked for")
                })?,
            _ if offset == 0 => resp.content_length().unwrap_or(0),
            _ => anyhow::bail!("{what}: the join service sent the whole file for a range"),
        };
        let mut bytes = Vec::new();
        resp.take(RELEASE_CHUNK + 1)
            .read_to_end(&mut bytes)
            .with_context(|| format!("reading {what}"))?;
        if bytes.len() as u64 > RELEASE_CHUNK || offset + bytes.len() as u64 > size {
            anyhow::bail!("{what}: the join service sent more than it said");
        }
        Ok((bytes, size))
    }

    /// Tell the centre which revision this node runs (10 s at most).
    pub fn config_applied(
        &self,
        hostname: &str,
        node_secret: &str,
        applied: &ConfigApplied,
    ) -> Result<()> {
        let resp = self
            .http
            .post(format!(
                "{}{NODES_PATH}{hostname}{CONFIG_SUFFIX}",
                self.base
            ))
            .bearer_auth(node_secret)
            .json(applied)
            .timeout(Duration::from_secs(10))
            .send_checked()
            .with_context(|| format!("reporting the applied config to {}", self.base))?;
        Self::decode::<serde_json::Value>(resp, "the config report").map(|_| ())
    }
}
