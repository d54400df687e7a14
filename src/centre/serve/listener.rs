//! The join service's connections: the accept loop (which backs off when
//! accepting fails, see [`super::backoff`]), the caps on open connections
//! ([`super::gate`]) and a time limit on each phase of a connection, so
//! that idle or slow clients give their place back.

use super::backoff::AcceptFailures;
use super::gate::Gate;
use super::{Limits, State};
use std::sync::Arc;
use std::time::Instant;

/// Accept and serve connections on `listener` forever.
pub async fn run(
    listener: tokio::net::TcpListener,
    acceptor: tokio_rustls::TlsAcceptor,
    state: Arc<State>,
    limits: Limits,
) {
    let gate = Gate::new(&limits);
    let mut failures = AcceptFailures::default();
    loop {
        let place = gate.place().await;
        let (stream, peer) = match listener.accept().await {
            Ok(x) => x,
            Err(e) => {
                let verdict = failures.failed(&e, Instant::now());
                if let Some(line) = verdict.log {
                    tracing::warn!("{line}");
                }
                tokio::time::sleep(verdict.wait).await;
                continue;
            }
        };
        if let Some(line) = failures.succeeded() {
            tracing::info!("{line}");
        }
        let Some(ticket) = gate.admit(place, peer.ip()) else {
            // Closed at once: this address holds its share already.
            tracing::debug!("{}: too many connections from this address", peer.ip());
            continue;
        };
        let (acceptor, state, limits) = (acceptor.clone(), state.clone(), limits.clone());
        tokio::spawn(async move {
            let _ticket = ticket;
            let tls = match tokio::time::timeout(limits.handshake, acceptor.accept(stream)).await {
                Ok(Ok(s)) => s,
                Ok(Err(e)) => {
                    tracing::debug!("{peer}: TLS handshake failed: {e}");
                    return;
                }
                Err(_) => {
                    tracing::debug!("{peer}: TLS handshake timed out");
                    return;
                }
            };
            let body_time = limits.body;
            let service = hyper::service::service_fn(move |req| {
                super::handle(state.clone(), peer, body_time, req)
            });
            let conn = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(limits.headers)
                .max_buf_size(16 * 1024)
                .max_headers(32)
                .serve_connection(hyper_util::rt::TokioIo::new(tls), service);
            match tokio::time::timeout(limits.connection, conn).await {
                Ok(Err(e)) => tracing::debug!("{peer}: connection closed: {e}"),
                Err(_) => tracing::debug!("{peer}: connection closed after its time limit"),
                Ok(Ok(())) => {}
            }
        });
    }
}
