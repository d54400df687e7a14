//! One HTTPS request of the join service: rate-limited, routed by method and
//! path ([`super::routes`]) to its handler, its body read within limits, its outcome logged.

use super::ratelimit::Caller;
use super::routes::Route;
use super::{State, answer_join, certificate, config, handlers, progress, shown, upgrade};
use crate::wire::{
    CERTIFICATE_MAX_BODY, CONFIG_MAX_BODY, ErrorReply, Health, PROGRESS_MAX_BODY, UPGRADE_MAX_BODY,
};
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

/// A response and the note its log line ends with.
type Answer = (Response<Full<Bytes>>, String);

async fn route(
    state: &Arc<State>,
    peer: SocketAddr,
    body_time: Duration,
    req: Request<Incoming>,
) -> Answer {
    let route = Route::resolve(req.method().as_str(), req.uri().path());
    if let Some(refusal) = too_old(&req) {
        return (refusal, String::new());
    }
    let caller = caller(&route);
    let credentialed = caller != Caller::Anonymous;
    if !state.limiter.allow(peer.ip(), caller) {
        return (
            error(
                429,
                "rate-limited",
                "too many requests from this address; wait a minute",
            ),
            String::new(),
        );
    }
    let (response, note) = match answer(state, route, body_time, req).await {
        Ok(answer) | Err(answer) => answer,
    };
    if credentialed && matches!(response.status().as_u16(), 401 | 403) {
        state.limiter.refused(peer.ip());
    }
    (response, note)
}

/// Who a request counts as, for its rate limit.
fn caller(route: &Route) -> Caller<'_> {
    match route {
        Route::JoinChallenge => Caller::Challenge,
        Route::Join | Route::Progress => Caller::Credential,
        Route::NodeStatus(host) | Route::FetchConfig(host) | Route::ReportConfig(host) => {
            Caller::Node(host.as_str())
        }
        Route::NodeCertificate(host) | Route::NodeUpgrade(host) => Caller::Node(host.as_str()),
        Route::ReleaseFile { host, .. } | Route::ImageFile { host, .. } => {
            Caller::Download(host.as_str())
        }
        Route::Health
        | Route::OldJoin
        | Route::TrustedCas
        | Route::NotAHostName(_)
        | Route::NotFound => Caller::Anonymous,
    }
}

/// What a route answers; `Err` is a refusal made before its handler ran
/// (a body too large or too slow, a handler that panicked).
async fn answer(
    state: &Arc<State>,
    route: Route,
    body_time: Duration,
    req: Request<Incoming>,
) -> Result<Answer, Answer> {
    let st = state.clone();
    Ok(match route {
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
        Route::Join => join(st, body_time, req).await?,
        // Refused before the body is read: nothing is provisioned for a
        // host that could not use what it gets.
        Route::OldJoin => (protocol_too_old(), String::new()),
        Route::Progress => {
            let bearer = bearer(&req);
            let body = (read_body(req, PROGRESS_MAX_BODY, body_time).await).map_err(unnoted)?;
            let a = off_the_runtime(move || progress::answer(&st.host, bearer.as_deref(), &body))
                .await?;
            (json(a.status, &a.body), a.note)
        }
        Route::FetchConfig(hostname) => {
            let note = format!("(node {} config)", shown(hostname.as_str()));
            let bearer = bearer(&req);
            let reply = off_the_runtime(move || {
                config::fetch(&st.host, &st.recipes, hostname.as_str(), bearer.as_deref())
            })
            .await?;
            or_refused(reply.map(|r| json(200, &r)), note)
        }
        Route::ReportConfig(hostname) => {
            let note = format!("(node {} config)", shown(hostname.as_str()));
            let bearer = bearer(&req);
            let body = (read_body(req, CONFIG_MAX_BODY, body_time).await).map_err(unnoted)?;
            let reply = off_the_runtime(move || {
                config::report(&st.host, hostname.as_str(), bearer.as_deref(), &body)
            })
            .await?;
            or_refused(reply.map(|()| json(200, &serde_json::json!({}))), note)
        }
        Route::NodeCertificate(hostname) => node_certificate(st, hostname, body_time, req).await?,
        Route::NodeUpgrade(hostname) => {
            let note = format!("(node {} upgrade)", shown(hostname.as_str()));
            let bearer = bearer(&req);
            let body = (read_body(req, UPGRADE_MAX_BODY, body_time).await).map_err(unnoted)?;
            let reply = off_the_runtime(move || {
                upgrade::check(
                    &st.host,
                    &st.campaign,
                    hostname.as_str(),
                    bearer.as_deref(),
                    &body,
                )
            })
            .await?;
            or_refused(reply.map(|o| json(200, &o)), note)
        }
        Route::ReleaseFile {
            host,
            release,
            file,
        } => piece(st, host, Piece::Release { release, file }, req).await?,
        Route::ImageFile { host, image } => piece(st, host, Piece::Image(image), req).await?,
        Route::TrustedCas => {
            match off_the_runtime(move || certificate::trusted_cas(&st.host)).await? {
                Ok(cas) => (json(200, &cas), String::new()),
                Err(r) => (json(r.status, &r.reply), String::new()),
            }
        }
        Route::NodeStatus(hostname) => {
            let note = format!("(node {})", shown(hostname.as_str()));
            let bearer = bearer(&req);
            let reply = off_the_runtime(move || {
                handlers::node_status(&st.host, hostname.as_str(), bearer.as_deref())
            })
            .await?;
            or_refused(reply.map(|s| json(200, &s)), note)
        }
        Route::NotAHostName(name) => (
            error(404, "bad-request", "not a host name"),
            format!("(node {})", shown(&name)),
        ),
        Route::NotFound => (error(404, "bad-request", "no such endpoint"), String::new()),
    })
}

async fn join(
    st: Arc<State>,
    body_time: Duration,
    req: Request<Incoming>,
) -> Result<Answer, Answer> {
    let body = read_body(req, MAX_BODY, body_time).await.map_err(unnoted)?;
    let a = off_the_runtime(move || {
        answer_join(
            &st.host,
            &st.recipes,
            st.accounts.as_ref(),
            &st.challenges,
            &st.joining,
            &body,
        )
    })
    .await?;
    Ok((json(a.status, &a.body), a.note))
}

/// Which file a piece is asked of.
enum Piece {
    Release { release: String, file: String },
    Image(String),
}

/// A piece of an edge release's file or of an image file. At most a few
/// are read at once (each up to a chunk in memory), whatever the number
/// of nodes asking.
async fn piece(
    st: Arc<State>,
    hostname: crate::types::NodeName,
    what: Piece,
    req: Request<Incoming>,
) -> Result<Answer, Answer> {
    let note = match &what {
        Piece::Release { release, file } => {
            format!(
                "(node {} release {release} {file})",
                shown(hostname.as_str())
            )
        }
        Piece::Image(id) => format!("(node {} image {id})", shown(hostname.as_str())),
    };
    let bearer = bearer(&req);
    let range = (req.headers().get("Range"))
        .and_then(|v| v.to_str().ok())
        .map(String::from);
    let state = st.clone();
    let Ok(_permit) = state.downloads.acquire().await else {
        return Err(unnoted(error(503, "busy", "the join service is stopping")));
    };
    let reply = off_the_runtime(move || match &what {
        Piece::Release { release, file } => upgrade::release_file(
            &st.host,
            hostname.as_str(),
            bearer.as_deref(),
            release,
            file,
            range.as_deref(),
        ),
        Piece::Image(id) => upgrade::image_file(
            &st.host,
            hostname.as_str(),
            bearer.as_deref(),
            id,
            range.as_deref(),
        ),
    })
    .await?;
    let response = reply.map(|piece| {
        let builder = Response::builder()
            .header("Content-Type", "application/octet-stream")
            .header("Accept-Ranges", "bytes");
        let builder = match piece.whole() {
            true => builder.status(200),
            false => builder
                .status(206)
                .header("Content-Range", piece.content_range()),
        };
        builder
            .body(Full::new(Bytes::from(piece.bytes)))
            .expect("a valid response")
    });
    Ok(or_refused(response, note))
}

/// The refusal of a node whose dcn (its `User-Agent`, `dcn/VERSION`) is
/// older than the oldest this control plane answers.
fn too_old(req: &Request<Incoming>) -> Option<Response<Full<Bytes>>> {
    let agent = req.headers().get("User-Agent")?.to_str().ok()?;
    let message = crate::release::refuse_old_node(agent)?;
    Some(error(426, "node-too-old", &message))
}

fn protocol_too_old() -> Response<Full<Bytes>> {
    error(
        410,
        "protocol-too-old",
        &format!(
            "this host's dcn speaks join protocol v1, which the control plane's dcn {v} no longer answers; run dcn {v} on the host (boot the site's ISO again, or copy the control plane's dcn binary), then join again",
            v = env!("CARGO_PKG_VERSION")
        ),
    )
}

async fn node_certificate(
    st: Arc<State>,
    hostname: crate::types::NodeName,
    body_time: Duration,
    req: Request<Incoming>,
) -> Result<Answer, Answer> {
    let note = format!("(node {} certificate)", shown(hostname.as_str()));
    let bearer = bearer(&req);
    let body = (read_body(req, CERTIFICATE_MAX_BODY, body_time).await).map_err(unnoted)?;
    let reply = off_the_runtime(move || {
        certificate::check(&st.host, hostname.as_str(), bearer.as_deref(), &body)
    })
    .await?;
    let what = match &reply {
        Ok(r) if r.certificate.is_some() => " renewed",
        Ok(_) => " checked",
        Err(_) => "",
    };
    Ok(or_refused(
        reply.map(|r| json(200, &r)),
        format!("{note}{what}"),
    ))
}

/// A refusal made before any handler ran: nothing to note.
fn unnoted(response: Response<Full<Bytes>>) -> Answer {
    (response, String::new())
}

/// Blocking work (files, locks, calls to OpenStack) off the async runtime;
/// if it panics, an internal error.
async fn off_the_runtime<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Answer> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| unnoted(error(500, "internal", &format!("{e}"))))
}

/// A handler's answer, or its refusal, with `note` (and the refusal's code)
/// for the log line.
fn or_refused(reply: Result<Response<Full<Bytes>>, handlers::Refusal>, note: String) -> Answer {
    match reply {
        Ok(response) => (response, note),
        Err(r) => {
            let note = format!("{note} refused: {}", r.reply.error);
            (json(r.status, &r.reply), note)
        }
    }
}
