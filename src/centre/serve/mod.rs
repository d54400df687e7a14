//! `dcn serve`: the join service on the control plane. HTTPS (rustls, the
//! `join` certificate of the dcn CA) on the join port, rate-limited per
//! client, with bounded connections and time limits ([`Limits`]), every
//! request logged without secrets and with what the client sent escaped;
//! nodes report their progress ([`progress`]); a background placer maps joined hosts to the cell and their site's
//! aggregate.

mod admission;
mod backoff;
mod certificate;
mod challenge;
mod config;
mod gate;
mod handlers;
mod joining;
mod listener;
mod placer;
mod progress;
mod ratelimit;
mod router;
pub mod routes;
mod upgrade;

use crate::host::Host;
use crate::openstack::accounts::{ControlPlaneAccounts, NodeAccounts};
use crate::recipes::Recipes;
use crate::wire::{ErrorReply, JoinRequest};
use anyhow::{Context, Result};
pub use challenge::Challenges;
pub use joining::Joining;
use router::handle;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

/// How much the join service gives one client, and for how long.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Connections open at once, in all.
    pub max_connections: usize,
    /// Connections open at once from one address.
    pub per_address: usize,
    /// Time to complete the TLS handshake.
    pub handshake: Duration,
    /// Time to send a request's headers (each request of a connection).
    pub headers: Duration,
    /// Time to send a request's body.
    pub body: Duration,
    /// Time a connection may stay open, whatever it does.
    pub connection: Duration,
}

impl Default for Limits {
    /// A site's hosts join a few at a time and poll their status now and
    /// then; these leave room for hundreds of them.
    fn default() -> Limits {
        Limits {
            max_connections: 256,
            per_address: 16,
            handshake: Duration::from_secs(10),
            headers: Duration::from_secs(10),
            body: Duration::from_secs(10),
            connection: Duration::from_secs(60),
        }
    }
}

/// Edge release pieces read at once: each holds up to
/// [`crate::wire::RELEASE_CHUNK`] in memory.
const DOWNLOADS_AT_ONCE: usize = 8;

struct State {
    host: Host,
    recipes: Recipes,
    accounts: Arc<dyn NodeAccounts>,
    challenges: Challenges,
    joining: Joining,
    limiter: ratelimit::RateLimiter,
    /// Edge release pieces being read at once.
    downloads: tokio::sync::Semaphore,
    /// The upgrade under way, as every node's check reads it.
    campaign: crate::centre::sites::upgrade_campaign::KeptCampaign,
}

/// Run the join service until killed, on the control plane's address and
/// join port.
pub fn run(host: Host, recipes: Recipes) -> Result<()> {
    let config = crate::deployment::saved_config(&host.files)?;
    let deployment = crate::deployment::Deployment::load(&host.files)?
        .context("this host is not a dcn control plane: run `dcn standalone init` first")?;
    let address: IpAddr = deployment
        .address
        .parse()
        .context("the control plane's address")?;
    serve_on(
        host,
        recipes,
        SocketAddr::new(address, config.control_plane.join_port.0),
    )
}

/// Run the join service on `listen` until killed, giving nodes accounts
/// on this control plane's RabbitMQ and keystone.
pub fn serve_on(host: Host, recipes: Recipes, listen: SocketAddr) -> Result<()> {
    let accounts = Arc::new(ControlPlaneAccounts::new(&host));
    serve_with(host, recipes, listen, Limits::default(), accounts)
}

/// Run the join service on `listen`, within `limits`, until killed, with
/// node accounts kept in `accounts`.
pub fn serve_with(
    host: Host,
    recipes: Recipes,
    listen: SocketAddr,
    limits: Limits,
    accounts: Arc<dyn NodeAccounts>,
) -> Result<()> {
    // The OVN SB's list of admitted nodes, from the registry (it is not
    // there yet after `standalone init` or a reset).
    let admitted = crate::centre::sites::southbound_members::admit(&host.files)?;
    tracing::info!("the OVN southbound admits {admitted} edge node(s)");
    let tls = server_tls(&host)?;

    let placer_host = host.clone();
    std::thread::spawn(move || placer::run(&placer_host));
    // What neutron reads of each chassis, as chassis come and change.
    let watcher_host = host.clone();
    std::thread::spawn(move || {
        let southbound = crate::openstack::southbound(watcher_host.runner.as_ref());
        placer::show_chassis_forever(&southbound)
    });
    // The pings that `dcn node list` and `dcn site status` judge chassis by.
    let pinger_host = host.clone();
    std::thread::spawn(move || {
        let southbound = crate::openstack::southbound(pinger_host.runner.as_ref());
        crate::centre::sites::chassis_liveness::ping_forever(&pinger_host, &southbound)
    });

    let state = Arc::new(State {
        host,
        recipes,
        accounts,
        challenges: Challenges::new(),
        joining: Joining::new(),
        limiter: ratelimit::RateLimiter::default(),
        downloads: tokio::sync::Semaphore::new(DOWNLOADS_AT_ONCE),
        campaign: Default::default(),
    });

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(listen)
            .await
            .with_context(|| format!("listening on {listen}"))?;
        tracing::info!("join service listening on https://{listen}");
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(tls));
        listener::run(listener, acceptor, state, limits).await;
        Ok(())
    })
}

/// The server's TLS configuration: the `join` leaf of the dcn CA, read
/// again when `dcn cert renew` replaces it.
fn server_tls(host: &Host) -> Result<rustls::ServerConfig> {
    let cert = host.files.host_path(crate::paths::leaf_cert("join"))?;
    let key = host.files.host_path(crate::paths::leaf_key("join"))?;
    crate::tls::reloading::server_config(cert, key, "the join service").context(
        "the join certificate does not load; run `dcn cert renew` (or `dcn standalone init --phase secrets`)",
    )
}

/// The join service's answer to a request body (a join or a progress
/// report).
pub struct JoinAnswer {
    pub status: u16,
    /// A [`crate::wire::JoinReply`] or
    /// [`crate::wire::ProgressAck`], or an [`ErrorReply`].
    pub body: serde_json::Value,
    /// For the log: the request's host and token id or phase (escaped),
    /// the outcome.
    pub note: String,
}

/// Answer a `POST /v1/progress` body sent with `bearer` (blocking: it
/// writes the registry). Any bytes may arrive.
pub fn answer_progress(host: &Host, bearer: Option<&str>, body: &[u8]) -> JoinAnswer {
    progress::answer(host, bearer, body)
}

/// Answer a `POST /v2/join` body (blocking: it signs, writes the registry
/// and makes accounts). Any bytes may arrive; this is the entry point of
/// the join-service fuzz target.
pub fn answer_join(
    host: &Host,
    recipes: &Recipes,
    accounts: &dyn NodeAccounts,
    challenges: &Challenges,
    joining: &Joining,
    body: &[u8],
) -> JoinAnswer {
    let refusal = |status: u16, message: String| JoinAnswer {
        status,
        body: serde_json::to_value(ErrorReply {
            error: "bad-request".into(),
            message,
        })
        .expect("serialisable"),
        note: String::new(),
    };
    let join: JoinRequest = match serde_json::from_slice(body) {
        Ok(j) => j,
        Err(e) => return refusal(400, format!("not a join request: {e}")),
    };
    let token_id: String = join
        .token
        .split('.')
        .next()
        .unwrap_or("")
        .chars()
        .take(8)
        .collect();
    let note = format!(
        "(host {}, token {})",
        shown(&join.hostname),
        shown(&token_id)
    );
    let (status, body, outcome) =
        match handlers::join(host, recipes, accounts, challenges, joining, &join) {
            Ok(reply) => (
                200,
                serde_json::to_value(&reply),
                format!("joined site {}", reply.site),
            ),
            Err(r) => (
                r.status,
                serde_json::to_value(&r.reply),
                format!("refused: {}", r.reply.error),
            ),
        };
    JoinAnswer {
        status,
        body: body.expect("serialisable"),
        note: format!("{note} {outcome}"),
    }
}

/// What a client sent, for the log: escaped (a newline cannot start a
/// forged line, an escape sequence cannot reach a terminal) and cut short.
fn shown(text: &str) -> String {
    const MAX: usize = 80;
    let cut = crate::terminal_text::head(text, MAX);
    let more = if cut.len() < text.len() { "…" } else { "" };
    format!("{cut:?}{more}")
}
