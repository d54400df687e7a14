//! The Redfish HTTP client: one BMC, HTTP basic authentication, a deadline
//! on every call for all of it (connecting, headers, the whole body and the
//! retries: [`super::deadline`]), bounded retries with jittered backoff on
//! connection errors (and, for requests that may be repeated, on 5xx), and
//! errors in plain words. The password goes into the Authorization header
//! and nowhere else: only to the exact origin the operator gave (see
//! [`super::transport`]).
//! Answers are read up to a size cap, and every string in them is cleaned
//! ([`super::untrusted`]) before the rest of dcn sees it, so what the BMC
//! says can be printed and logged.

use super::deadline::Deadline;
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
    /// Time limit of each call, for all of it: connecting, the headers,
    /// the whole body, and the retries.
    pub timeout: Duration,
    /// The setting that raises `timeout` (`--timeout`), named when a call
    /// runs out of time; `None` when the operator has none.
    pub timeout_from: Option<String>,
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
    /// Overrides the client's time limit of a call (InsertMedia may
    /// download the image); a stretch's deadline still caps it.
    pub timeout: Option<Duration>,
    /// The setting that raises `timeout` (`--media-timeout`), if any.
    pub timeout_from: Option<&'a str>,
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
            timeout_from: None,
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
#[derive(Clone)]
pub struct Client {
    http: reqwest::blocking::Client,
    base: Url,
    username: String,
    password: Secret,
    redactor: Redactor,
    trust: ServerTrust,
    presented: Presented,
    timeout: Duration,
    timeout_from: Option<String>,
    /// The deadline of the stretch this client's calls are part of.
    deadline: Option<Deadline>,
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
            timeout_from: opts.timeout_from.clone(),
            deadline: None,
            retry: opts.retry,
            credentials_from: opts.credentials_from.clone(),
        })
    }

    /// The same client, its calls made part of a stretch that must end by
    /// `deadline` (or by the one it already had, if earlier): each call
    /// gets at most the time left.
    pub fn within(&self, deadline: &Deadline) -> Client {
        let mut c = self.clone();
        c.deadline = Some(match c.deadline.take() {
            Some(d) => d.earlier(deadline.clone()),
            None => deadline.clone(),
        });
        c
    }

    /// Wait `d` before trying again, or less when the stretch ends sooner.
    pub fn pause(&self, d: Duration) {
        match &self.deadline {
            Some(deadline) => deadline.sleep(d),
            None => std::thread::sleep(d),
        }
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
    pub fn get<T: DeserializeOwned>(&self, path: &str) -> Result<Fetched<T>, SendError> {
        let reply = self.send(&Request::new(Method::GET, path))?;
        let read = || -> Result<Fetched<T>> {
            let mut value: Value = serde_json::from_str(&reply.body)
                .with_context(|| format!("GET {path}: the BMC's answer is not JSON"))?;
            self.redactor.clean_value(&mut value);
            let etag = reply
                .etag
                .as_ref()
                .map(|t| self.redactor.clean(t))
                .or_else(|| value["@odata.etag"].as_str().map(str::to_string));
            let value = serde_path_to_error::deserialize(value)
                .with_context(|| format!("GET {path}: unexpected contents"))?;
            Ok(Fetched { value, etag })
        };
        read().map_err(SendError::Other)
    }

    /// Send a request: retried as [`Request::retry_on`] says, all of it
    /// by one deadline (its time limit, or the stretch's), a 4xx/5xx answer as
    /// [`SendError::Answered`] (a 401 as [`SendError::Login`]). The body of a
    /// successful answer is returned as the BMC sent it (at most
    /// [`transport::MAX_BODY`]): clean what is shown of it.
    pub fn send(&self, req: &Request) -> Result<Reply, SendError> {
        let url = self.url(req.path).map_err(SendError::Other)?;
        let limit = self.limit(req);
        let mut attempt = 1;
        loop {
            if limit.deadline.passed() {
                return Err(SendError::Other(anyhow!(self.no_time_left(&limit, req))));
            }
            let outcome = self.send_once(req, &url, &limit.deadline);
            let why_retry = match &outcome {
                // A connection that timed out is not retried: the time is
                // gone.
                Err(Failure::Http(e))
                    if e.is_connect() && !e.is_timeout() && !self.tls_refused() =>
                {
                    Some("could not connect".to_string())
                }
                Ok((status, _, _))
                    if *status >= 500 && req.retry_on == RetryOn::ConnectAndServerErrors =>
                {
                    Some(format!("answered {status}"))
                }
                _ => None,
            };
            let delay = self.retry.delay(attempt + 1);
            // A retry that could not finish in time is not made.
            let retry = why_retry
                .filter(|_| attempt < self.retry.attempts && delay < limit.deadline.left());
            if let Some(why) = retry {
                attempt += 1;
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
                Err(e) => {
                    return Err(SendError::Other(
                        self.transport_error(e, req, attempt, &limit),
                    ));
                }
            };
            if status < 400 {
                return Ok(Reply { status, etag, body });
            }
            let answer = RedfishError::from_body(req.method.as_str(), req.path, status, &body)
                .cleaned(&self.redactor);
            if status == 401 {
                return Err(SendError::Login {
                    check: format!(
                        "the BMC at {} refused the user name or password of {:?}: check {}",
                        self.base, self.username, self.credentials_from
                    ),
                    answer: Box::new(answer),
                });
            }
            return Err(SendError::Answered(Box::new(answer)));
        }
    }

    /// The deadline of one call: its own time limit from now, or the
    /// stretch's when that ends first.
    fn limit(&self, req: &Request) -> Limit {
        let (time, raised_by) = match req.timeout {
            Some(t) => (t, req.timeout_from),
            None => (self.timeout, self.timeout_from.as_deref()),
        };
        let mut own = Deadline::after(time, "the call");
        if let Some(setting) = raised_by {
            own = own.set_by(setting);
        }
        match &self.deadline {
            Some(d) if d.left() < own.left() => Limit {
                allowed: d.left(),
                deadline: d.clone(),
                stretch: true,
            },
            _ => Limit {
                allowed: own.total(),
                deadline: own,
                stretch: false,
            },
        }
    }

    fn send_once(
        &self,
        req: &Request,
        url: &Url,
        deadline: &Deadline,
    ) -> std::result::Result<(u16, Option<String>, String), Failure> {
        tracing::debug!("{} {}", req.method, url);
        // reqwest bounds the whole exchange, body included, by a request's
        // own timeout (a client's is per read): the time left, each attempt.
        let mut rb = self
            .http
            .request(req.method.clone(), url.clone())
            .basic_auth(&self.username, Some(self.password.expose()))
            .header("Accept", "application/json")
            .header("OData-Version", "4.0")
            .timeout(deadline.left());
        if let Some(body) = req.body {
            rb = rb.json(body);
        }
        if let Some(tag) = req.if_match {
            rb = rb.header("If-Match", tag);
        }
        let resp = rb.send().map_err(Failure::Http)?;
        let status = resp.status().as_u16();
        let etag = resp
            .headers()
            .get("ETag")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let body = match transport::read_capped(resp, transport::MAX_BODY, deadline) {
            Ok(b) => String::from_utf8_lossy(&b).into_owned(),
            Err(e) => return Err(Failure::Body(e)),
        };
        tracing::trace!(
            "{} {} -> {status}: {}",
            req.method,
            req.path,
            self.redactor.clean(crate::terminal_text::head(&body, 4096))
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
}

/// What bounds one call.
struct Limit {
    deadline: Deadline,
    /// The time it had when it started.
    allowed: Duration,
    /// The stretch's deadline, not the call's own limit.
    stretch: bool,
}

/// Why no answer could be used.
enum Failure {
    /// Sending, or receiving the status and headers.
    Http(reqwest::Error),
    /// Receiving the body.
    Body(BodyError),
}

mod errors;
mod send_error;

pub use send_error::SendError;
#[cfg(test)]
mod tests;
