//! A small OpenStack REST client: keystone password authentication, the
//! service catalog, and JSON requests with bounded retries (a transient
//! `RemoteDisconnected` from nova-api was seen in the lab). One process
//! making HTTP calls replaces dozens of `openstack` CLI runs (1.5–3 s each).

use crate::secrets::Secret;
use anyhow::{Context, Result, bail};
use reqwest::Method;
use reqwest::blocking::{Client, Response};
use serde_json::{Value, json};
use std::time::Duration;

/// Attempts of a request that fails with a connection error or a 5xx.
const ATTEMPTS: u32 = 4;

/// Credentials to log in with.
#[derive(Debug, Clone)]
pub struct Credentials {
    pub auth_url: String,
    pub username: String,
    pub password: Secret,
    pub project: String,
    pub region: String,
    /// Catalog interface to call: `internal` (the control plane's own
    /// loopback endpoints) or `public` (TLS, as edges and clients see it).
    pub interface: String,
}

/// The admin of the control plane on `host`, through its loopback
/// endpoints, in the region of its saved config.
pub fn admin(host: &crate::host::Host) -> Result<Cloud> {
    let config = crate::deployment::saved_config(&host.files)?;
    let passwords = crate::passwords::PasswordStore::load(&host.files)?;
    Cloud::login(
        &Credentials {
            auth_url: "http://127.0.0.1:5000/v3".into(),
            username: "admin".into(),
            password: passwords.get("keystone_admin")?.clone(),
            project: "admin".into(),
            region: config.control_plane.region.to_string(),
            interface: "internal".into(),
        },
        None,
    )
    .context("logging in to the control plane as admin (is `dcn standalone init` finished?)")
}

/// How long a kept login is used: keystone's tokens live an hour, and a
/// login costs keystone a password hash check (logging in every round or
/// every join was the largest constant cost, docs/scale.md).
pub const LOGIN_KEPT: Duration = Duration::from_secs(30 * 60);

/// A login shared by the calls of a long-running service: made when first
/// needed, kept for [`LOGIN_KEPT`], and made again after a caller saw it
/// fail ([`KeptLogin::forget`]: an expired token, a restarted keystone).
pub struct KeptLogin<T: ?Sized> {
    kept: std::sync::Mutex<Option<(std::time::Instant, std::sync::Arc<T>)>>,
}

impl<T: ?Sized> Default for KeptLogin<T> {
    fn default() -> Self {
        KeptLogin {
            kept: std::sync::Mutex::new(None),
        }
    }
}

impl<T: ?Sized> KeptLogin<T> {
    /// The kept login, or a new one from `log_in`.
    pub fn get(
        &self,
        log_in: impl FnOnce() -> Result<std::sync::Arc<T>>,
    ) -> Result<std::sync::Arc<T>> {
        let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((at, login)) = kept.as_ref()
            && at.elapsed() < LOGIN_KEPT
        {
            return Ok(login.clone());
        }
        // Under the lock: callers at once wait for one login, not make
        // one each.
        let login = log_in()?;
        *kept = Some((std::time::Instant::now(), login.clone()));
        Ok(login)
    }

    /// Log in again next time.
    pub fn forget(&self) {
        self.kept.lock().unwrap_or_else(|p| p.into_inner()).take();
    }
}

/// An authenticated session.
pub struct Cloud {
    http: Client,
    token: Secret,
    catalog: Value,
    region: String,
    interface: String,
}

/// An HTTP error status from a service, with its body.
#[derive(Debug, thiserror::Error)]
#[error("{method} {url} returned {status}: {body}")]
pub struct ApiError {
    pub method: String,
    pub url: String,
    pub status: u16,
    pub body: String,
}

impl Cloud {
    /// Log in with a password (scoped to `project` in the Default domain).
    pub fn login(creds: &Credentials, ca_pem: Option<&str>) -> Result<Cloud> {
        let http = crate::tls::http_client(ca_pem, Duration::from_secs(60))?;
        let body = json!({"auth": {
            "identity": {"methods": ["password"], "password": {"user": {
                "name": creds.username, "domain": {"id": "default"},
                "password": creds.password.expose()}}},
            "scope": {"project": {"name": creds.project, "domain": {"id": "default"}}}
        }});
        let url = format!("{}/auth/tokens", creds.auth_url.trim_end_matches('/'));
        let resp = send(&http, Method::POST, &url, None, Some(&body)).with_context(|| {
            format!(
                "logging in to keystone at {} as {}",
                creds.auth_url, creds.username
            )
        })?;
        let token = resp
            .headers()
            .get("X-Subject-Token")
            .and_then(|v| v.to_str().ok())
            .context("keystone issued no X-Subject-Token")?
            .to_string();
        let body: Value = resp.json().context("reading keystone's token response")?;
        Ok(Cloud {
            http,
            token: Secret::new(token),
            catalog: body["token"]["catalog"].clone(),
            region: creds.region.clone(),
            interface: creds.interface.clone(),
        })
    }

    /// The token (for a check that one is issued).
    pub fn token(&self) -> &Secret {
        &self.token
    }

    /// Service types in the catalog.
    pub fn catalog_types(&self) -> Vec<String> {
        self.catalog
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|s| s["type"].as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The endpoint of `service_type` in our region and interface.
    pub fn endpoint(&self, service_type: &str) -> Result<String> {
        let service = self
            .catalog
            .as_array()
            .and_then(|a| a.iter().find(|s| s["type"] == service_type))
            .with_context(|| format!("the catalog has no {service_type} service"))?;
        service["endpoints"]
            .as_array()
            .and_then(|e| {
                e.iter().find(|e| {
                    e["interface"] == self.interface.as_str()
                        && e["region_id"] == self.region.as_str()
                })
            })
            .and_then(|e| e["url"].as_str())
            .map(|u| u.trim_end_matches('/').to_string())
            .with_context(|| {
                format!(
                    "the catalog has no {} {service_type} endpoint in {}",
                    self.interface, self.region
                )
            })
    }

    /// A JSON request to `service_type`'s endpoint + `path`.
    pub fn request(
        &self,
        method: Method,
        service_type: &str,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Value> {
        let url = format!("{}{path}", self.endpoint(service_type)?);
        self.request_url(method, &url, body)
    }

    /// [`Cloud::request`], with a 4xx answer given back as a value (the
    /// 404 or 401 a caller expects) rather than as an error.
    pub fn try_request(
        &self,
        method: Method,
        service_type: &str,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Result<Value, ApiError>> {
        let url = format!("{}{path}", self.endpoint(service_type)?);
        match answer(
            &self.http,
            method,
            &url,
            Some(&self.token),
            body,
            API_VERSIONS,
        )? {
            Ok(resp) => Ok(Ok(json_of(resp, &url)?)),
            Err(refused) => Ok(Err(refused)),
        }
    }

    /// A JSON request to a full URL.
    pub fn request_url(&self, method: Method, url: &str, body: Option<&Value>) -> Result<Value> {
        let resp = send(&self.http, method, url, Some(&self.token), body)?;
        json_of(resp, url)
    }

    pub fn get(&self, service_type: &str, path: &str) -> Result<Value> {
        self.request(Method::GET, service_type, path, None)
    }

    pub fn post(&self, service_type: &str, path: &str, body: &Value) -> Result<Value> {
        self.request(Method::POST, service_type, path, Some(body))
    }

    /// The body of `GET path` on `service_type`'s endpoint, handed to
    /// `sink` in pieces as it arrives (an image's data), at most `max`
    /// bytes; how many came.
    pub fn download(
        &self,
        service_type: &str,
        path: &str,
        max: u64,
        sink: &mut dyn FnMut(&[u8]) -> Result<()>,
    ) -> Result<u64> {
        use std::io::Read;
        let url = format!("{}{path}", self.endpoint(service_type)?);
        let mut resp = self
            .http
            .get(&url)
            .header("X-Auth-Token", self.token.expose())
            .timeout(Duration::from_secs(3600))
            .send()
            .with_context(|| format!("GET {url}"))?;
        if !resp.status().is_success() {
            anyhow::bail!(ApiError {
                method: "GET".into(),
                url: url.clone(),
                status: resp.status().as_u16(),
                body: crate::terminal_text::head(&resp.text().unwrap_or_default(), 500).to_string(),
            });
        }
        let mut buf = vec![0u8; 1024 * 1024];
        let mut total = 0u64;
        loop {
            let n = resp
                .read(&mut buf)
                .with_context(|| format!("reading {url}"))?;
            if n == 0 {
                return Ok(total);
            }
            total += n as u64;
            if total > max {
                anyhow::bail!("{url} sent more than the {max} bytes it said it has");
            }
            sink(&buf[..n])?;
        }
    }

    /// A POST that needs a newer API microversion than dcn's other calls
    /// (`versions`, as the `OpenStack-API-Version` header says them).
    pub fn post_at(
        &self,
        service_type: &str,
        path: &str,
        body: &Value,
        versions: &str,
    ) -> Result<Value> {
        let url = format!("{}{path}", self.endpoint(service_type)?);
        let resp = answer(
            &self.http,
            Method::POST,
            &url,
            Some(&self.token),
            Some(body),
            versions,
        )??;
        json_of(resp, &url)
    }
}

/// The API versions dcn's calls are written for: placement and nova
/// answer with their oldest otherwise.
const API_VERSIONS: &str = "placement 1.6, compute 2.53";

/// A response's JSON body (`null` when it has none).
fn json_of(resp: Response, url: &str) -> Result<Value> {
    if resp.status() == reqwest::StatusCode::NO_CONTENT {
        return Ok(Value::Null);
    }
    let text = resp.text().context("reading a response")?;
    if text.trim().is_empty() {
        return Ok(Value::Null);
    }
    serde_json::from_str(&text)
        .with_context(|| format!("{url} answered with something that is not JSON"))
}

/// [`answer`], a 4xx as an error.
fn send(
    http: &Client,
    method: Method,
    url: &str,
    token: Option<&Secret>,
    body: Option<&Value>,
) -> Result<Response> {
    Ok(answer(http, method, url, token, body, API_VERSIONS)??)
}

/// Send a request, retrying connection errors and 5xx a bounded number of
/// times; a 4xx is the inner [`ApiError`], at once.
fn answer(
    http: &Client,
    method: Method,
    url: &str,
    token: Option<&Secret>,
    body: Option<&Value>,
    versions: &str,
) -> Result<Result<Response, ApiError>> {
    let mut last = None;
    for attempt in 1..=ATTEMPTS {
        let mut req = http
            .request(method.clone(), url)
            .header("Accept", "application/json")
            .header("OpenStack-API-Version", versions);
        if let Some(t) = token {
            req = req.header("X-Auth-Token", t.expose());
        }
        if let Some(b) = body {
            req = req.json(b);
        }
        match req.send() {
            Ok(r) if r.status().is_server_error() => {
                let status = r.status().as_u16();
                last = Some(anyhow::Error::new(ApiError {
                    method: method.to_string(),
                    url: url.to_string(),
                    status,
                    body: crate::terminal_text::head(&r.text().unwrap_or_default(), 500)
                        .to_string(),
                }));
            }
            Ok(r) if r.status().is_client_error() => {
                return Ok(Err(ApiError {
                    method: method.to_string(),
                    url: url.to_string(),
                    status: r.status().as_u16(),
                    body: crate::terminal_text::head(&r.text().unwrap_or_default(), 500)
                        .to_string(),
                }));
            }
            Ok(r) => return Ok(Ok(r)),
            Err(e) => last = Some(anyhow::Error::new(e).context(format!("{method} {url}"))),
        }
        if attempt < ATTEMPTS {
            std::thread::sleep(Duration::from_millis(500 * 2u64.pow(attempt - 1)));
        }
    }
    let err = last.expect("the loop ran");
    bail!("{err:#} (after {ATTEMPTS} attempts)")
}
