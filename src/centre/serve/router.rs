//! One HTTPS request of the join service: rate-limited, routed by method and
//! path ([`super::routes`]) to its handler, its body read within limits, its outcome logged.

use super::routes::Route;
use super::{State, answer_join, certificate, config, handlers, progress, shown};
use crate::wire::{CERTIFICATE_MAX_BODY, CONFIG_MAX_BODY, ErrorReply, Health, PROGRESS_MAX_BODY};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// Largest request body accepted (a join request with its CSR is ~2 KiB).
const MAX_BODY: usize = 64 * 1024;

fn json<T: serde::Serialize>(status: u16, body: &T) -> Response<Full<Bytes>> {
    Response::builder()
        .status(status)
        .header("Content-Type", "application/json")
        .body(Full::new(Bytes::from(
            serde_json::to_vec(body).expect("serialisable"),
        )))
        .expect("a valid response")
}

fn error(status: u16, error: &str, message: &str) -> Response<Full<Bytes>> {
    json(
        status,
        &ErrorReply {
            error: error.into(),
            message: message.into(),
        },
    )
}

pub(super) async fn handle(
    state: Arc<State>,
    peer: SocketAddr,
    body_time: Duration,
    req: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let method = req.method().clone();
    let path = shown(req.uri().path());
    let (response, note) = route(&state, peer, body_time, req).await;
    // Logged: who asked what and the outcome; never tokens or passwords,
    // and what the client chose only through `shown`.
    tracing::info!(
        "{} {method} {path} -> {} {note}",
        peer.ip(),
        response.status().as_u16()
    );
    Ok(response)
}

/// The `Authorization: Bearer` credential, if any.
fn bearer(req: &Request<Incoming>) -> Option<String> {
    req.headers()
        .get("Authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(String::from)
}

/// A request's body, at most `max` bytes, within `time`; else the refusal.
async fn read_body(
    req: Request<Incoming>,
    max: usize,
    time: Duration,
) -> Result<Bytes, Response<Full<Bytes>>> {
    let body = Limited::new(req.into_body(), max).collect();
    match tokio::time::timeout(time, body).await {
        Ok(Ok(b)) => Ok(b.to_bytes()),
        Ok(Err(_)) => Err(error(413, "bad-request", "the request is too large")),
        Err(_) => Err(error(
            408,
            "bad-request",
            "the request body came too slowly",
        )),
    }
}

async fn route(
    state: &Arc<State>,
    peer: SocketAddr,
    body_time: Duration,
    req: Request<Incoming>,
) -> (Response<Full<Bytes>>, String) {
    if !state.limiter.allow(peer.ip()) {
        return (
            error(
                429,
                "rate-limited",
                "too many requests from this address; wait a minute",
            ),
            String::new(),
        );
    }
    let route = Route::resolve(req.method().as_str(), req.uri().path());
    let config_report = matches!(route, Route::ReportConfig(_));
    match route {
        Route::Health => (
            json(
                200,
                &Health {
                    time: crate::timefmt::rfc3339(SystemTime::now()),
                },
            ),
            String::new(),
        ),
        Route::JoinChallenge => (
            json(200, &state.challenges.issue(SystemTime::now())),
            String::new(),
        ),
        Route::Join => {
            let body = match read_body(req, MAX_BODY, body_time).await {
                Ok(b) => b,
                Err(refusal) => return (refusal, String::new()),
            };
            let st = state.clone();
            match tokio::task::spawn_blocking(move || {
                answer_join(&st.host, st.accounts.as_ref(), &st.challenges, &body)
            })
            .await
            {
                Ok(a) => (json(a.status, &a.body), a.note),
                Err(e) => (error(500, "internal", &format!("{e}")), String::new()),
            }
        }
        // Refused before the body is read: nothing is provisioned for a
        // host that could not use what it gets.
        Route::OldJoin => (
            error(
                410,
                "protocol-too-old",
                &format!(
                    "this host's dcn speaks join protocol v1, which the control plane's dcn {v} no longer answers; run dcn {v} on the host (boot the site's ISO again, or copy the control plane's dcn binary), then join again",
                    v = env!("CARGO_PKG_VERSION")
                ),
            ),
            String::new(),
        ),
        Route::Progress => {
            let bearer = bearer(&req);
            let body = match read_body(req, PROGRESS_MAX_BODY, body_time).await {
                Ok(b) => b,
                Err(refusal) => return (refusal, String::new()),
            };
            let st = state.clone();
            match tokio::task::spawn_blocking(move || {
                progress::answer(&st.host, bearer.as_deref(), &body)
            })
            .await
            {
                Ok(a) => (json(a.status, &a.body), a.note),
                Err(e) => (error(500, "internal", &format!("{e}")), String::new()),
            }
        }
        Route::FetchConfig(hostname) | Route::ReportConfig(hostname) => {
            let shown_host = shown(hostname.as_str());
            let bearer = bearer(&req);
            let body = if config_report {
                match read_body(req, CONFIG_MAX_BODY, body_time).await {
                    Ok(b) => Some(b),
                    Err(refusal) => return (refusal, String::new()),
                }
            } else {
                None
            };
            let st = state.clone();
            let answer = tokio::task::spawn_blocking(move || match body {
                None => config::fetch(&st.host, hostname.as_str(), bearer.as_deref())
                    .map(|reply| json(200, &reply)),
                Some(body) => config::report(&st.host, hostname.as_str(), bearer.as_deref(), &body)
                    .map(|()| json(200, &serde_json::json!({}))),
            })
            .await;
            match answer {
                Ok(Ok(response)) => (response, format!("(node {shown_host} config)")),
                Ok(Err(r)) => (
                    json(r.status, &r.reply),
                    format!("(node {shown_host} config) refused: {}", r.reply.error),
                ),
                Err(e) => (error(500, "internal", &format!("{e}")), String::new()),
            }
        }
        Route::NodeCertificate(hostname) => {
            let shown_host = shown(hostname.as_str());
            let bearer = bearer(&req);
            let body = match read_body(req, CERTIFICATE_MAX_BODY, body_time).await {
                Ok(b) => b,
                Err(refusal) => return (refusal, String::new()),
            };
            let st = state.clone();
            match tokio::task::spawn_blocking(move || {
                certificate::check(&st.host, hostname.as_str(), bearer.as_deref(), &body)
            })
            .await
            {
                Ok(Ok(reply)) => {
                    let what = if reply.certificate.is_some() {
                        "renewed"
                    } else {
                        "checked"
                    };
                    (
                        json(200, &reply),
                        format!("(node {shown_host} certificate) {what}"),
                    )
                }
                Ok(Err(r)) => (
                    json(r.status, &r.reply),
                    format!("(node {shown_host} certificate) refused: {}", r.reply.error),
                ),
                Err(e) => (error(500, "internal", &format!("{e}")), String::new()),
            }
        }
        Route::TrustedCas => {
            let st = state.clone();
            match tokio::task::spawn_blocking(move || certificate::trusted_cas(&st.host)).await {
                Ok(Ok(cas)) => (json(200, &cas), String::new()),
                Ok(Err(r)) => (json(r.status, &r.reply), String::new()),
                Err(e) => (error(500, "internal", &format!("{e}")), String::new()),
            }
        }
        Route::NodeStatus(hostname) => {
            let shown_host = shown(hostname.as_str());
            let bearer = bearer(&req);
            let st = state.clone();
            match tokio::task::spawn_blocking(move || {
                handlers::node_status(&st.host, hostname.as_str(), bearer.as_deref())
            })
            .await
            {
                Ok(Ok(status)) => (json(200, &status), format!("(node {shown_host})")),
                Ok(Err(r)) => (
                    json(r.status, &r.reply),
                    format!("(node {shown_host}) refused: {}", r.reply.error),
                ),
                Err(e) => (error(500, "internal", &format!("{e}")), String::new()),
            }
        }
        Route::NotAHostName(name) => (
            error(404, "bad-request", "not a host name"),
            format!("(node {})", shown(&name)),
        ),
        Route::NotFound => (error(404, "bad-request", "no such endpoint"), String::new()),
    }
}
