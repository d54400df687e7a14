//! `dcn image serve DIR`: the files of one directory over HTTP, read-only,
//! for BMCs to fetch. A BMC pulls its virtual media (it cannot be pushed)
//! and usually reads an ISO in byte ranges as the server asks for blocks,
//! so single ranges are answered with 206. Only regular files under DIR
//! are served: no listings, no dot-files, no paths that leave DIR (`..`,
//! symbolic links pointing out). Each request is logged.
//!
//! The server faces the BMC network, so it is built to hold up against
//! hostile clients: hyper parses HTTP/1.1 with bounded heads, and
//! [`Limits`] bounds what each connection may cost. The parts:
//! [`admit`] (connection slots, in all and per client), [`meter`] (the
//! slow-reader bound), [`respond`] (the answer to one request), [`body`]
//! (a file streamed in chunks), [`target`] and [`range`] (what a request
//! asks for), [`log`] and [`throttle`] (log lines no client can forge or
//! flood).

mod admit;
mod body;
mod limits;
mod log;
mod meter;
mod range;
mod respond;
mod target;
mod throttle;

pub use limits::Limits;

use admit::{Admission, Refusal, Ticket};
use anyhow::{Context, Result, bail};
use hyper_util::rt::{TokioIo, TokioTimer};
use std::io::Write;
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use throttle::Throttle;

/// What `dcn image serve` serves, where, and how.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// The directory whose regular files are served.
    pub dir: PathBuf,
    pub listen: SocketAddr,
    pub limits: Limits,
    /// HTTPS with this certificate chain and key (PEM files); both or
    /// neither.
    pub tls_cert: Option<PathBuf>,
    pub tls_key: Option<PathBuf>,
}

/// `dcn image serve`: bind, say where, serve until killed.
pub fn serve_images(opts: &ServeOptions) -> Result<()> {
    let mut server = ImageServer::bind(&opts.dir, opts.listen)?.with_limits(opts.limits.clone());
    if let (Some(cert), Some(key)) = (&opts.tls_cert, &opts.tls_key) {
        server = server.with_tls(tls_from_files(cert, key)?);
    }
    let addr = server.local_addr()?;
    let files = server.files();
    let scheme = server.scheme();
    tracing::info!(
        "Serving {} read-only on {scheme}://{addr}/ ({} file(s){}). A BMC must reach this address: give it a URL such as {scheme}://<this host's address on the BMC network>:{}/{}",
        server.root.display(),
        files.len(),
        if files.is_empty() {
            ", none yet".to_string()
        } else {
            format!(": {}", files.join(", "))
        },
        addr.port(),
        files.first().map(String::as_str).unwrap_or("edge.iso")
    );
    server.run()
}

/// The TLS configuration from `--tls-cert` and `--tls-key`; a key others
/// may read is refused (it would let them pose as this server).
fn tls_from_files(cert: &Path, key: &Path) -> Result<rustls::ServerConfig> {
    use crate::host::read::{MAX_PEM, ReadSpec, read_string};
    // PEM files of a few kilobytes; a key must be private.
    let cert_pem = read_string(cert, &ReadSpec::up_to(MAX_PEM)).context("--tls-cert")?;
    let key_pem = read_string(key, &ReadSpec::up_to(MAX_PEM).private()).context("--tls-key")?;
    crate::tls::server_config(&cert_pem, &key_pem, "the image server")
        .context("--tls-cert and --tls-key must be a PEM certificate and its PKCS#8 key")
}

/// A bound image server.
pub struct ImageServer {
    listener: TcpListener,
    root: PathBuf,
    limits: Limits,
    /// HTTPS when set: ISOs with a node's payload carry a join token.
    tls: Option<tokio_rustls::TlsAcceptor>,
}

impl ImageServer {
    /// Listen on `addr` for the files under `dir`, with the default
    /// [`Limits`].
    pub fn bind(dir: &Path, addr: SocketAddr) -> Result<ImageServer> {
        let root = dir
            .canonicalize()
            .with_context(|| format!("{}: cannot serve it", dir.display()))?;
        if !root.is_dir() {
            bail!("{} is not a directory", dir.display());
        }
        let listener = TcpListener::bind(addr).with_context(|| {
            format!(
                "listening on {addr} (is another server using the port? choose one with --listen)"
            )
        })?;
        Ok(ImageServer {
            listener,
            root,
            limits: Limits::default(),
            tls: None,
        })
    }

    /// Serve with other bounds than the defaults.
    pub fn with_limits(mut self, limits: Limits) -> ImageServer {
        self.limits = limits;
        self
    }

    /// Serve HTTPS with this configuration instead of HTTP. The handshake
    /// must finish within the head deadline, and the slow-reader bound
    /// counts the bytes on the wire.
    pub fn with_tls(mut self, config: rustls::ServerConfig) -> ImageServer {
        self.tls = Some(tokio_rustls::TlsAcceptor::from(Arc::new(config)));
        self
    }

    /// `https` or `http`.
    pub fn scheme(&self) -> &'static str {
        if self.tls.is_some() { "https" } else { "http" }
    }

    pub fn local_addr(&self) -> Result<SocketAddr> {
        Ok(self.listener.local_addr()?)
    }

    /// The regular files directly in the directory, for the start message.
    fn files(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(&self.root)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| !n.starts_with('.'))
            .collect();
        names.sort();
        names
    }

    /// Serve until the process ends.
    pub fn run(self) -> Result<()> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .context("starting the image server's runtime")?;
        rt.block_on(self.accept_loop())
    }

    async fn accept_loop(self) -> Result<()> {
        self.listener.set_nonblocking(true)?;
        let listener = tokio::net::TcpListener::from_std(self.listener)?;
        let root: Arc<Path> = self.root.into();
        let limits = Arc::new(self.limits);
        let tls = self.tls;
        let admission = Admission::new(limits.max_connections, limits.max_per_client);
        let (refusals, accept_errors) = (
            Throttle::new(Duration::from_secs(10)),
            Throttle::new(Duration::from_secs(10)),
        );
        loop {
            let (stream, peer) = match listener.accept().await {
                Ok(c) => c,
                Err(e) => {
                    // Out of file descriptors, say: retrying at once would
                    // spin; waiting lets connections end and free some.
                    if let Some(held) = accept_errors.allow() {
                        tracing::warn!("accepting a connection: {e} ({held} more not logged)");
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            };
            match admission.admit(peer.ip()) {
                Ok(ticket) => {
                    let (root, limits, tls) = (root.clone(), limits.clone(), tls.clone());
                    tokio::spawn(serve_connection(stream, peer, ticket, root, limits, tls));
                }
                Err(why) => {
                    if let Some(held) = refusals.allow() {
                        tracing::warn!(
                            "refusing a connection from {peer}: {} ({held} more refusals not logged)",
                            why.message().trim_end()
                        );
                    }
                    refuse(stream, why);
                }
            }
        }
    }
}

/// Answer 503 and close, without waiting on the client: the answer fits
/// the empty send buffer of a new socket, or is dropped.
fn refuse(stream: tokio::net::TcpStream, why: Refusal) {
    let body = why.message();
    let answer = format!(
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nRetry-After: 5\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    if let Ok(mut s) = stream.into_std() {
        let _ = s.write(answer.as_bytes());
        let _ = s.shutdown(std::net::Shutdown::Write);
    }
}

/// Serve one connection until the client closes it or a bound ends it.
async fn serve_connection(
    stream: tokio::net::TcpStream,
    peer: SocketAddr,
    _ticket: Ticket,
    root: Arc<Path>,
    limits: Arc<Limits>,
    tls: Option<tokio_rustls::TlsAcceptor>,
) {
    let _ = stream.set_nodelay(true);
    let progress = Arc::new(meter::Progress::default());
    let metered = meter::Metered::new(stream, progress.clone());
    let Some(tls) = tls else {
        return serve_http(metered, peer, root, &limits, &progress).await;
    };
    match tokio::time::timeout(limits.head_timeout, tls.accept(metered)).await {
        Ok(Ok(stream)) => serve_http(stream, peer, root, &limits, &progress).await,
        Ok(Err(e)) => tracing::info!("{peer}: TLS handshake failed: {e}"),
        Err(_) => tracing::info!(
            "{peer}: closing the connection: no TLS handshake within {}s",
            limits.head_timeout.as_secs()
        ),
    }
}

/// HTTP/1.1 over `io` (plain or TLS), under the limits.
async fn serve_http<S>(
    io: S,
    peer: SocketAddr,
    root: Arc<Path>,
    limits: &Limits,
    progress: &Arc<meter::Progress>,
) where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let io = TokioIo::new(io);
    let service = hyper::service::service_fn(move |req| {
        let root = root.clone();
        async move { Ok::<_, std::convert::Infallible>(respond::respond(req, root, peer).await) }
    });
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.head_timeout)
        .max_buf_size(limits::BUFFER.max(limits.max_head))
        .max_header_size(limits.max_head)
        .max_headers(limits.max_headers)
        .serve_connection(io, service);
    tokio::select! {
        r = conn => if let Err(e) = r {
            tracing::debug!("{peer}: {e}");
        },
        why = meter::watchdog(progress, limits.stall_window, limits.min_bytes) => {
            tracing::info!("{peer}: closing the connection: {why}");
        }
    }
}
