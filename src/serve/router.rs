//! One HTTPS request of the join service: rate-limited, routed by method and
//! path to its handler, its body read within limits, its outcome logged.

use super::{State, answer_join, config, handlers, progress, shown};
use crate::join::protocol::{
    CONFIG_MAX_BODY, CONFIG_SUFFIX, ErrorReply, HEALTH_PATH, Health, JOIN_PATH, NODES_PATH,
    OLD_JOIN_PATH, PROGRESS_MAX_BODY, PROGRESS_PATH,
};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::{Method, Request, Response};
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
    let path = req.uri().path().to_string();
    match (req.method().clone(), path.as_str()) {
        (Method::GET, HEALTH_PATH) => (
            json(
                200,
                &Health {
                    time: crate::timefmt::rfc3339(SystemTime::now()),
                },
            ),
            String::new(),
        ),
        (Method::POST, JOIN_PATH) => {
            let body = match read_body(req, MAX_BODY, body_time).await {
                Ok(b) => b,
                Err(refusal) => return (refusal, String::new()),
            };
            let st = state.clone();
            match tokio::task::spawn_blocking(move || {
                answer_join(&st.host, st.accounts.as_ref(), &body)
            })
            .await
            {
                Ok(a) => (json(a.status, &a.body), a.note),
                Err(e) => (error(500, "internal", &format!("{e}")), String::new()),
            }
        }
        // Refused before the body is read: nothing is provisioned for a
        // host that could not use what it gets.
        (Method::POST, OLD_JOIN_PATH) => (
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
        (Method::POST, PROGRESS_PATH) => {
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
        (method, p)
            if p.starts_with(NODES_PATH)
                && p.ends_with(CONFIG_SUFFIX)
                && (method == Method::GET || method == Method::POST) =>
        {
            let hostname = p[NODES_PATH.len()..p.len() - CONFIG_SUFFIX.len()].to_string();
            let shown_host = shown(&hostname);
            if hostname.parse::<crate::config::types::Hostname>().is_err() {
                return (
                    error(404, "bad-request", "not a host name"),
                    format!("(node {shown_host} config)"),
                );
            }
            let bearer = bearer(&req);
            let body = if method == Method::POST {
                match read_body(req, CONFIG_MAX_BODY, body_time).await {
                    Ok(b) => Some(b),
                    Err(refusal) => return (refusal, String::new()),
                }
            } else {
                None
            };
            let st = state.clone();
            let answer = tokio::task::spawn_blocking(move || match body {
                None => config::fetch(&st.host, &hostname, bearer.as_deref())
                    .map(|reply| json(200, &reply)),
                Some(body) => config::report(&st.host, &hostname, bearer.as_deref(), &body)
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
        (Method::GET, p) if p.starts_with(NODES_PATH) => {
            let hostname = p[NODES_PATH.len()..].to_string();
            let shown_host = shown(&hostname);
            if hostname.parse::<crate::config::types::Hostname>().is_err() {
                return (
                    error(404, "bad-request", "not a host name"),
                    format!("(node {shown_host})"),
                );
            }
            let bearer = bearer(&req);
            let st = state.clone();
            let h = hostname.clone();
            match tokio::task::spawn_blocking(move || {
                handlers::node_status(&st.host, &h, bearer.as_deref())
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
        _ => (error(404, "bad-request", "no such endpoint"), String::new()),
    }
}
