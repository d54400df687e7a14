//! The Redfish HTTP client: one BMC, HTTP basic authentication, a timeout on
//! every request, bounded retries with jittered backoff on connection errors
//! (and, for requests that may be repeated, on 5xx), and errors in plain
//! words. The password goes into the Authorization header and nowhere else.

use super::error::RedfishError;
use crate::secrets::Secret;
use crate::tls::{Presented, ServerTrust};
use anyhow::{Context, Result, anyhow, bail};
use reqwest::{Method, Url};
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::time::Duration;

/// How to reach a BMC.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// `https://HOST[:PORT]` (a bare host means https).
    pub url: String,
    pub username: String,
    pub password: Secret,
    pub trust: ServerTrust,
    /// Time limit of each request.
    pub timeout: Duration,
    pub retry: Retry,
}

/// Bounded retries: `attempts` in all, waiting about `base_delay`, then
/// twice that, and so on (each wait jittered down by up to half, so that
/// several dcn runs do not hammer a BMC in step).
#[derive(Debug, Clone, Copy)]
pub struct Retry {
    pub attempts: u32,
    pub base_delay: Duration,
}

impl Default for Retry {
    fn default() -> Retry {
        Retry {
            attempts: 4,
            base_delay: Duration::from_millis(1000),
        }
    }
}

impl Retry {
    /// The wait before attempt `next` (2, 3, …).
    pub fn delay(&self, next: u32) -> Duration {
        let full = self.base_delay * 2u32.saturating_pow(next.saturating_sub(2));
        let full = full.min(Duration::from_secs(30));
        let mut b = [0u8; 2];
        getrandom::fill(&mut b).expect("the OS random number generator failed");
        let frac = f64::from(u16::from_le_bytes(b)) / f64::from(u16::MAX);
        full.mul_f64(0.5 + frac / 2.0)
    }
}

/// A response body with the resource's ETag (header or `@odata.etag`).
#[derive(Debug, Clone)]
pub struct Fetched<T> {
    pub value: T,
    pub etag: Option<String>,
}

/// Which errors a request is repeated after.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryOn {
    /// Only when the connection failed (nothing reached the BMC).
    Connect,
    /// Also on 5xx: for reads and PATCHes, which are safe to repeat.
    ConnectAndServerErrors,
}

/// A request.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    pub method: Method,
    pub path: &'a str,
    pub body: Option<&'a Value>,
    pub if_match: Option<&'a str>,
    /// Overrides the client's time limit (InsertMedia may download the image).
    pub timeout: Option<Duration>,
    pub retry_on: RetryOn,
}

impl<'a> Request<'a> {
    pub fn new(method: Method, path: &'a str) -> Request<'a> {
        let retry_on = if method == Method::POST {
            RetryOn::Connect
        } else {
            RetryOn::ConnectAndServerErrors
        };
        Request {
            method,
            path,
            body: None,
            if_match: None,
            timeout: None,
            retry_on,
        }
    }

    pub fn json(mut self, body: &'a Value) -> Request<'a> {
        self.body = Some(body);
        self
    }
}

/// A successful response.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub etag: Option<String>,
    pub body: String,
}

/// A Redfish client for one BMC.
pub struct Client {
    http: reqwest::blocking::Client,
    base: Url,
    username: String,
    password: Secret,
    trust: ServerTrust,
    presented: Presented,
    timeout: Duration,
    retry: Retry,
}

impl Client {
    pub fn new(opts: &ClientOptions) -> Result<Client> {
        let base = base_url(&opts.url)?;
        let insecure = matches!(opts.trust, ServerTrust::Insecure);
        if base.scheme() == "http" && !insecure {
            bail!(
                "refusing to send the BMC password over plain HTTP to {base}: use https://, or --insecure if this BMC really has no TLS"
            );
        }
        if insecure {
            tracing::warn!(
                "--insecure: the BMC's certificate is not checked, so anyone on the path to {base} can read the BMC password and change what the server boots; pin the BMC's key instead (`dcn bmc fingerprint --bmc {base}`, then --bmc-pin)"
            );
        }
        let presented = Presented::default();
        let tls = crate::tls::client_config_for(&opts.trust, &presented)?;
        let http = reqwest::blocking::Client::builder()
            .use_preconfigured_tls(tls)
            .timeout(opts.timeout)
            .connect_timeout(opts.timeout.min(Duration::from_secs(15)))
            .user_agent(concat!("dcn/", env!("CARGO_PKG_VERSION")))
            .build()
            .context("building an HTTP client")?;
        Ok(Client {
            http,
            base,
            username: opts.username.clone(),
            password: opts.password.clone(),
            trust: opts.trust.clone(),
            presented,
            timeout: opts.timeout,
            retry: opts.retry,
        })
    }

    /// `https://host:port`, for messages.
    pub fn base(&self) -> &Url {
        &self.base
    }

    pub fn retry(&self) -> Retry {
        self.retry
    }

    /// The pin of the key the BMC presented, once a handshake was made.
    pub fn presented_pin(&self) -> Option<crate::pki::Pin> {
        self.presented.last().and_then(|p| p.pin)
    }

    /// GET a resource.
    pub fn get<T: DeserializeOwned>(&self, path: &str) -> Result<Fetched<T>> {
        let reply = self.send(&Request::new(Method::GET, path))?;
        let value: Value = serde_json::from_str(&reply.body)
            .with_context(|| format!("GET {path}: the BMC's answer is not JSON"))?;
        let etag = reply
            .etag
            .or_else(|| value["@odata.etag"].as_str().map(str::to_string));
        let value = serde_path_to_error::deserialize(value)
            .with_context(|| format!("GET {path}: unexpected contents"))?;
        Ok(Fetched { value, etag })
    }

    /// Send a request: retried as [`Request::retry_on`] says, a 4xx/5xx
    /// answer as a [`RedfishError`] (a 401 with what to check).
    pub fn send(&self, req: &Request) -> Result<Reply> {
        let url = self.url(req.path)?;
        let mut attempt = 1;
        loop {
            let outcome = self.send_once(req, &url);
            let why_retry = match &outcome {
                Err(e) if e.is_connect() && !self.tls_refused() => {
                    Some("could not connect".to_string())
                }
                Ok((status, _, _))
                    if *status >= 500 && req.retry_on == RetryOn::ConnectAndServerErrors =>
                {
                    Some(format!("answered {status}"))
                }
                _ => None,
            };
            if let Some(why) = why_retry.filter(|_| attempt < self.retry.attempts) {
                attempt += 1;
                let delay = self.retry.delay(attempt);
                tracing::info!(
                    "{} {}: the BMC {why}; retrying in {:.1}s (attempt {attempt} of {})",
                    req.method,
                    req.path,
                    delay.as_secs_f64(),
                    self.retry.attempts
                );
                std::thread::sleep(delay);
                continue;
            }
            let (status, etag, body) = match outcome {
                Ok(ok) => ok,
                Err(e) => return Err(self.transport_error(e, req, attempt)),
            };
            if status < 400 {
                return Ok(Reply { status, etag, body });
            }
            let err = RedfishError::from_body(req.method.as_str(), req.path, status, &body);
            if status == 401 {
                return Err(anyhow::Error::new(err).context(format!(
                    "the BMC at {} refused the user name or password of {:?}: check --username, and the password in --password-file or DCN_BMC_PASSWORD",
                    self.base, self.username
                )));
            }
            return Err(err.into());
        }
    }

    fn send_once(
        &self,
        req: &Request,
        url: &Url,
    ) -> std::result::Result<(u16, Option<String>, String), reqwest::Error> {
        tracing::debug!("{} {}", req.method, url);
        let mut rb = self
            .http
            .request(req.method.clone(), url.clone())
            .basic_auth(&self.username, Some(self.password.expose()))
            .header("Accept", "application/json")
            .header("OData-Version", "4.0");
        if let Some(body) = req.body {
            rb = rb.json(body);
        }
        if let Some(tag) = req.if_match {
            rb = rb.header("If-Match", tag);
        }
        if let Some(t) = req.timeout {
            rb = rb.timeout(t);
        }
        let resp = rb.send()?;
        let status = resp.status().as_u16();
        let etag = resp
            .headers()
            .get("ETag")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let body = resp.text()?;
        tracing::trace!("{} {} -> {status}: {body}", req.method, req.path);
        Ok((status, etag, body))
    }

    fn tls_refused(&self) -> bool {
        self.presented.last().is_some_and(|p| p.refused.is_some())
    }

    /// The URL of `path`; a link to another host is refused, since the
    /// credentials would go with it.
    fn url(&self, path: &str) -> Result<Url> {
        let url = self
            .base
            .join(path)
            .with_context(|| format!("{path:?} is not a valid Redfish path"))?;
        if url.origin() != self.base.origin() {
            bail!(
                "the BMC links to {} outside {}; dcn does not send the BMC credentials there",
                url.origin().ascii_serialization(),
                self.base
            );
        }
        Ok(url)
    }

    fn transport_error(&self, e: reqwest::Error, req: &Request, attempts: u32) -> anyhow::Error {
        let base = &self.base;
        if let Some(p) = self.presented.last()
            && let Some(reason) = &p.refused
        {
            return anyhow!(self.tls_refusal(reason, p.pin.as_ref()));
        }
        let chain = error_chain(&e);
        if e.is_timeout() {
            let secs = req.timeout.unwrap_or(self.timeout).as_secs();
            return anyhow!(
                "the BMC at {base} did not answer {} {} within {secs}s ({chain}); a busy BMC can be slow: try again, or raise --timeout",
                req.method,
                req.path
            );
        }
        if e.is_connect() {
            return anyhow!(
                "cannot connect to the BMC at {base} ({attempts} attempt(s)): {chain}; check the address and that this machine can reach the BMC's HTTPS port"
            );
        }
        anyhow!("{} {} on the BMC at {base}: {chain}", req.method, req.path)
    }

    fn tls_refusal(&self, reason: &str, presented: Option<&crate::pki::Pin>) -> String {
        let base = &self.base;
        let shown = presented
            .map(|p| p.to_string())
            .unwrap_or_else(|| "unknown".into());
        match &self.trust {
            ServerTrust::Pin(pin) => format!(
                "refusing the BMC at {base}: its certificate's public key is {shown}, not the pinned {pin} (--bmc-pin); nothing was sent to it. If the BMC's certificate was replaced on purpose, check the new one out of band (`dcn bmc fingerprint --bmc {base}`) and pin it; otherwise something is impersonating the BMC"
            ),
            _ => format!(
                "refusing the BMC at {base}: its certificate is not trusted ({reason}); nothing was sent to it. BMCs often have a self-signed certificate: check it out of band (`dcn bmc fingerprint --bmc {base}`; it presented {shown}) and pass --bmc-pin, or trust its CA with --bmc-ca FILE"
            ),
        }
    }
}

/// The origin of an operator's BMC address: `10.0.0.5` → `https://10.0.0.5/`.
pub(crate) fn base_url(given: &str) -> Result<Url> {
    let with_scheme = if given.contains("://") {
        given.to_string()
    } else {
        format!("https://{given}")
    };
    let url = Url::parse(&with_scheme)
        .map_err(|e| anyhow!("--bmc must look like https://HOST[:PORT] ({e})"))?;
    if !url.username().is_empty() || url.password().is_some() {
        // Not echoing the URL: it holds credentials.
        bail!(
            "--bmc must not carry credentials: give the user with --username and the password in --password-file or DCN_BMC_PASSWORD"
        );
    }
    if !matches!(url.scheme(), "https" | "http") {
        bail!("--bmc must be an https:// URL, not {}://", url.scheme());
    }
    let host = url.host_str().context("--bmc has no host")?;
    let mut base = Url::parse(&format!("{}://{host}/", url.scheme()))?;
    base.set_port(url.port()).ok();
    Ok(base)
}

/// A reqwest error and its causes on one line, without repeats.
fn error_chain(e: &reqwest::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut cur: Option<&dyn std::error::Error> = Some(e);
    while let Some(err) = cur {
        let s = err.to_string();
        if !s.is_empty() && !parts.iter().any(|p| p.contains(&s)) {
            parts.push(s);
        }
        cur = err.source();
    }
    parts.join(": ")
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
    fn backoff_grows_and_is_jittered_within_bounds() {
        let r = Retry {
            attempts: 4,
            base_delay: Duration::from_millis(1000),
        };
        for _ in 0..50 {
            let d2 = r.delay(2);
            let d3 = r.delay(3);
            assert!(d2 >= Duration::from_millis(500) && d2 <= Duration::from_millis(1000));
            assert!(d3 >= Duration::from_millis(1000) && d3 <= Duration::from_millis(2000));
        }
        assert!(r.delay(40) <= Duration::from_secs(30));
    }

    #[test]
    fn plain_http_needs_insecure() {
        let opts = |trust| ClientOptions {
            url: "http://127.0.0.1:1".into(),
            username: "admin".into(),
            password: Secret::new("pw"),
            trust,
            timeout: Duration::from_secs(1),
            retry: Retry::default(),
        };
        let err = Client::new(&opts(ServerTrust::Pin(
            "sha256:0000000000000000000000000000000000000000000000000000000000000000"
                .parse()
                .unwrap(),
        )))
        .err()
        .unwrap();
        assert!(err.to_string().contains("plain HTTP"), "{err}");
        assert!(Client::new(&opts(ServerTrust::Insecure)).is_ok());
    }
}
