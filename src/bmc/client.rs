//! The Redfish HTTP client: one BMC, HTTP basic authentication, a timeout on
//! every request, bounded retries with jittered backoff on connection errors
//! (and, for requests that may be repeated, on 5xx), and errors in plain
//! words. The password goes into the Authorization header and nowhere else:
//! only to the exact origin the operator gave (see [`super::transport`]).
//! Answers are read up to a size cap, and every string in them is cleaned
//! ([`super::untrusted`]) before the rest of dcn sees it, so what the BMC
//! says can be printed and logged.

use super::error::RedfishError;
pub use super::retry::Retry;
pub(crate) use super::transport::base_url;
use super::transport::{self, BodyError};
use super::untrusted::Redactor;
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
    /// Where the operator set the user name and password, named when the
    /// BMC refuses them.
    pub credentials_from: String,
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
    redactor: Redactor,
    trust: ServerTrust,
    presented: Presented,
    timeout: Duration,
    retry: Retry,
    credentials_from: String,
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
            .redirect(transport::redirect_policy(&base))
            .user_agent(concat!("dcn/", env!("CARGO_PKG_VERSION")))
            .build()
            .context("building an HTTP client")?;
        Ok(Client {
            http,
            base,
            username: opts.username.clone(),
            password: opts.password.clone(),
            redactor: Redactor::new(&opts.username, &opts.password),
            trust: opts.trust.clone(),
            presented,
            timeout: opts.timeout,
            retry: opts.retry,
            credentials_from: opts.credentials_from.clone(),
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

    /// GET a resource. Its strings are cleaned: no password, no control
    /// characters.
    pub fn get<T: DeserializeOwned>(&self, path: &str) -> Result<Fetched<T>> {
        let reply = self.send(&Request::new(Method::GET, path))?;
        let mut value: Value = serde_json::from_str(&reply.body)
            .with_context(|| format!("GET {path}: the BMC's answer is not JSON"))?;
        self.redactor.clean_value(&mut value);
        let etag = reply
            .etag
            .map(|t| self.redactor.clean(&t))
            .or_else(|| value["@odata.etag"].as_str().map(str::to_string));
        let value = serde_path_to_error::deserialize(value)
            .with_context(|| format!("GET {path}: unexpected contents"))?;
        Ok(Fetched { value, etag })
    }

    /// Send a request: retried as [`Request::retry_on`] says, a 4xx/5xx
    /// answer as a [`RedfishError`] (a 401 with what to check). The body of
    /// a successful answer is returned as the BMC sent it (at most
    /// [`transport::MAX_BODY`]): clean what is shown of it.
    pub fn send(&self, req: &Request) -> Result<Reply> {
        let url = self.url(req.path)?;
        let mut attempt = 1;
        loop {
            let outcome = self.send_once(req, &url);
            let why_retry = match &outcome {
                Err(Failure::Http(e)) if e.is_connect() && !self.tls_refused() => {
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
            let err = RedfishError::from_body(req.method.as_str(), req.path, status, &body)
                .cleaned(&self.redactor);
            if status == 401 {
                return Err(anyhow::Error::new(err).context(format!(
                    "the BMC at {} refused the user name or password of {:?}: check {}",
                    self.base, self.username, self.credentials_from
                )));
            }
            return Err(err.into());
        }
    }

    fn send_once(
        &self,
        req: &Request,
        url: &Url,
    ) -> std::result::Result<(u16, Option<String>, String), Failure> {
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
        let resp = rb.send().map_err(Failure::Http)?;
        let status = resp.status().as_u16();
        let etag = resp
            .headers()
            .get("ETag")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let body = match transport::read_capped(resp, transport::MAX_BODY) {
            Ok(b) => String::from_utf8_lossy(&b).into_owned(),
            Err(e) => return Err(Failure::Body(e)),
        };
        tracing::trace!(
            "{} {} -> {status}: {}",
            req.method,
            req.path,
            self.redactor
                .clean(&body.chars().take(4096).collect::<String>())
        );
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

    fn transport_error(&self, f: Failure, req: &Request, attempts: u32) -> anyhow::Error {
        let base = &self.base;
        if let Some(p) = self.presented.last()
            && let Some(reason) = &p.refused
        {
            return anyhow!(self.tls_refusal(&self.redactor.clean(reason), p.pin.as_ref()));
        }
        let e = match f {
            Failure::Http(e) => e,
            Failure::Body(BodyError::Http(e)) => e,
            Failure::Body(BodyError::Io(e)) => {
                let e = self.redactor.clean(&e.to_string());
                return anyhow!(
                    "reading the answer of the BMC at {base} to {} {}: {e}",
                    req.method,
                    req.path
                );
            }
            Failure::Body(BodyError::TooLarge { announced }) => {
                return anyhow!(transport::too_large(
                    base,
                    req.method.as_str(),
                    req.path,
                    announced
                ));
            }
        };
        if let Some(r) = transport::redirect_refusal(&e) {
            return anyhow!(transport::redirect_refused(
                r,
                base,
                req.method.as_str(),
                req.path
            ));
        }
        let chain = self.redactor.clean(&error_chain(&e));
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

/// Why no answer could be used.
enum Failure {
    /// Sending, or receiving the status and headers.
    Http(reqwest::Error),
    /// Receiving the body.
    Body(BodyError),
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
mod tests;
