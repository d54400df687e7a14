//! `dcn image serve DIR`: the files of one directory over HTTP, read-only,
//! for BMCs to fetch. A BMC pulls its virtual media (it cannot be pushed)
//! and usually reads an ISO in byte ranges as the server asks for blocks,
//! so single ranges are answered with 206. Only regular files under DIR
//! are served: no listings, no dot-files, no paths that leave DIR (`..`,
//! symbolic links pointing out). Each request is logged.

use anyhow::{Context, Result, bail};
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Connections served at once; more get 503.
const MAX_CONNECTIONS: usize = 64;
/// How long a connection may sit idle between requests.
const IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// Longest request head (request line and headers).
const MAX_HEAD: usize = 16 * 1024;

/// `dcn image serve`: bind, say where, serve until killed.
pub fn serve_images(args: &crate::cli::bmc::ImageServeArgs) -> Result<()> {
    let server = ImageServer::bind(&args.dir, args.listen)?;
    let addr = server.local_addr()?;
    let files = server.files();
    tracing::info!(
        "Serving {} read-only on http://{addr}/ ({} file(s){}). A BMC must reach this address: give it a URL such as http://<this host's address on the BMC network>:{}/{}",
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

/// A bound image server.
pub struct ImageServer {
    listener: TcpListener,
    root: PathBuf,
}

impl ImageServer {
    /// Listen on `addr` for the files under `dir`.
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
        Ok(ImageServer { listener, root })
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

    /// Serve until the process ends; one thread per connection.
    pub fn run(self) -> Result<()> {
        let root = Arc::new(self.root);
        let active = Arc::new(AtomicUsize::new(0));
        for conn in self.listener.incoming() {
            let stream = match conn {
                Ok(s) => s,
                Err(e) => {
                    tracing::warn!("accepting a connection: {e}");
                    continue;
                }
            };
            let (root, active) = (root.clone(), active.clone());
            if active.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTIONS {
                active.fetch_sub(1, Ordering::SeqCst);
                let mut s = stream;
                let _ = s.write_all(
                    b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                );
                continue;
            }
            std::thread::spawn(move || {
                let peer = stream
                    .peer_addr()
                    .map(|a| a.to_string())
                    .unwrap_or_else(|_| "?".into());
                if let Err(e) = serve_connection(stream, &root, &peer) {
                    tracing::debug!("{peer}: {e:#}");
                }
                active.fetch_sub(1, Ordering::SeqCst);
            });
        }
        Ok(())
    }
}

/// A parsed request head.
struct Head {
    method: String,
    target: String,
    version: String,
    headers: Vec<(String, String)>,
}

impl Head {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Whether the connection can serve another request after this one.
    /// A request with a body (which this server never reads) or another
    /// method than GET/HEAD ends it.
    fn keep_alive(&self) -> bool {
        let has_body = self.header("Transfer-Encoding").is_some()
            || self
                .header("Content-Length")
                .is_some_and(|l| l.trim() != "0");
        if has_body || !matches!(self.method.as_str(), "GET" | "HEAD") {
            return false;
        }
        let conn = self.header("Connection").unwrap_or("").to_ascii_lowercase();
        if self.version == "HTTP/1.0" {
            conn.contains("keep-alive")
        } else {
            !conn.contains("close")
        }
    }
}

fn serve_connection(stream: TcpStream, root: &Path, peer: &str) -> Result<()> {
    stream.set_read_timeout(Some(IDLE_TIMEOUT))?;
    stream.set_write_timeout(Some(IDLE_TIMEOUT))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut out = stream;
    loop {
        let Some(head) = read_head(&mut reader)? else {
            return Ok(());
        };
        let started = Instant::now();
        let keep = head.keep_alive();
        let (status, note) = respond(&head, root, &mut out, keep)?;
        tracing::info!(
            "{peer} \"{} {}\" {status}{note} ({:.1}s)",
            head.method,
            head.target,
            started.elapsed().as_secs_f64()
        );
        if !keep {
            return Ok(());
        }
    }
}

/// The next request head, or `None` at the end of the connection.
fn read_head(reader: &mut impl BufRead) -> Result<Option<Head>> {
    let mut lines = Vec::new();
    let mut total = 0;
    loop {
        let mut line = String::new();
        let n = reader.read_line(&mut line)?;
        if n == 0 {
            return Ok(None);
        }
        total += n;
        if total > MAX_HEAD {
            bail!("request head over {MAX_HEAD} bytes");
        }
        let line = line.trim_end_matches(['\r', '\n']).to_string();
        if line.is_empty() {
            if lines.is_empty() {
                continue; // a stray CRLF between requests
            }
            break;
        }
        lines.push(line);
    }
    let mut first = lines[0].split_whitespace();
    let (Some(method), Some(target), Some(version)) = (first.next(), first.next(), first.next())
    else {
        bail!("malformed request line {:?}", lines[0]);
    };
    let headers = lines[1..]
        .iter()
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    Ok(Some(Head {
        method: method.to_string(),
        target: target.to_string(),
        version: version.to_string(),
        headers,
    }))
}

/// Answer one request; returns the status and a note for the log.
fn respond(head: &Head, root: &Path, out: &mut TcpStream, keep: bool) -> Result<(u16, String)> {
    let conn = if keep { "keep-alive" } else { "close" };
    let simple = |out: &mut TcpStream,
                  status: u16,
                  reason: &str,
                  extra: &str|
     -> Result<(u16, String)> {
        let body = format!("{status} {reason}\n");
        write!(
            out,
            "HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n{extra}Connection: {conn}\r\n\r\n",
            body.len()
        )?;
        if head.method != "HEAD" {
            out.write_all(body.as_bytes())?;
        }
        Ok((status, String::new()))
    };
    if head.method != "GET" && head.method != "HEAD" {
        return simple(out, 405, "Method Not Allowed", "Allow: GET, HEAD\r\n");
    }
    let Some(path) = resolve(root, &head.target) else {
        return simple(out, 404, "Not Found", "");
    };
    let Ok(mut file) = File::open(&path) else {
        return simple(out, 404, "Not Found", "");
    };
    let meta = file.metadata()?;
    let len = meta.len();
    let validator = meta
        .modified()
        .ok()
        .and_then(|m| m.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| format!("\"{:x}-{:x}\"", len, d.as_secs()))
        .unwrap_or_default();
    // If-Range with another validator: the file changed, send all of it.
    let range_applies = head.header("If-Range").is_none_or(|v| v == validator);
    let range = match head.header("Range").filter(|_| range_applies) {
        None => None,
        Some(r) => match parse_range(r, len) {
            RangeSpec::Whole => None,
            RangeSpec::Part(a, b) => Some((a, b)),
            RangeSpec::Unsatisfiable => {
                return simple(
                    out,
                    416,
                    "Range Not Satisfiable",
                    &format!("Content-Range: bytes */{len}\r\n"),
                );
            }
        },
    };
    let (status, reason, start, count) = match range {
        Some((a, b)) => (206, "Partial Content", a, b - a + 1),
        None => (200, "OK", 0, len),
    };
    let mut headers = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: application/octet-stream\r\nContent-Length: {count}\r\nAccept-Ranges: bytes\r\nETag: {validator}\r\nConnection: {conn}\r\n"
    );
    if status == 206 {
        headers.push_str(&format!(
            "Content-Range: bytes {start}-{}/{len}\r\n",
            start + count - 1
        ));
    }
    headers.push_str("\r\n");
    out.write_all(headers.as_bytes())?;
    if head.method == "GET" {
        file.seek(SeekFrom::Start(start))?;
        let sent = std::io::copy(&mut (&mut file).take(count), out)?;
        if sent < count {
            bail!("{} shrank while it was sent", path.display());
        }
    }
    let note = if status == 206 {
        format!(" bytes {start}-{}/{len}", start + count - 1)
    } else {
        format!(" {len} bytes")
    };
    Ok((status, note))
}

/// The file a request target names, if it is a regular file inside `root`.
fn resolve(root: &Path, target: &str) -> Option<PathBuf> {
    let path = target.split(['?', '#']).next()?;
    let path = percent_decode(path)?;
    if !path.starts_with('/') {
        return None;
    }
    let mut full = root.to_path_buf();
    for part in path.split('/').filter(|p| !p.is_empty()) {
        if part.starts_with('.') || part.contains('\\') || part.contains('\0') {
            return None;
        }
        full.push(part);
    }
    // Symbolic links may point anywhere: judge where they end up.
    let real = full.canonicalize().ok()?;
    (real.starts_with(root) && real.is_file()).then_some(real)
}

fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[derive(Debug, PartialEq, Eq)]
enum RangeSpec {
    /// No usable range: send the whole file (several ranges, or syntax
    /// this server does not do; RFC 9110 lets a server ignore Range).
    Whole,
    /// Bytes `a..=b`.
    Part(u64, u64),
    Unsatisfiable,
}

fn parse_range(header: &str, len: u64) -> RangeSpec {
    let Some(spec) = header.trim().strip_prefix("bytes=") else {
        return RangeSpec::Whole;
    };
    if spec.contains(',') {
        return RangeSpec::Whole;
    }
    let Some((a, b)) = spec.trim().split_once('-') else {
        return RangeSpec::Whole;
    };
    let (a, b) = (a.trim(), b.trim());
    let range = match (a.parse::<u64>(), b.parse::<u64>()) {
        // bytes=-N: the last N bytes.
        (Err(_), Ok(n)) if a.is_empty() => {
            if n == 0 || len == 0 {
                return RangeSpec::Unsatisfiable;
            }
            (len.saturating_sub(n), len - 1)
        }
        (Ok(a), Err(_)) if b.is_empty() => (a, len.saturating_sub(1)),
        (Ok(a), Ok(b)) if a <= b => (a, b.min(len.saturating_sub(1))),
        _ => return RangeSpec::Whole,
    };
    if range.0 >= len {
        return RangeSpec::Unsatisfiable;
    }
    RangeSpec::Part(range.0, range.1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges() {
        use RangeSpec::*;
        assert_eq!(parse_range("bytes=0-99", 1000), Part(0, 99));
        assert_eq!(parse_range("bytes=900-", 1000), Part(900, 999));
        assert_eq!(parse_range("bytes=-100", 1000), Part(900, 999));
        assert_eq!(parse_range("bytes=-5000", 1000), Part(0, 999));
        assert_eq!(parse_range("bytes=990-2000", 1000), Part(990, 999));
        assert_eq!(parse_range("bytes=1000-", 1000), Unsatisfiable);
        assert_eq!(parse_range("bytes=-0", 1000), Unsatisfiable);
        assert_eq!(parse_range("bytes=0-1,5-6", 1000), Whole);
        assert_eq!(parse_range("bytes=5-1", 1000), Whole);
        assert_eq!(parse_range("items=0-1", 1000), Whole);
    }

    #[test]
    fn paths_stay_inside_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::write(root.join("edge.iso"), b"x").unwrap();
        std::fs::write(root.join(".hidden"), b"x").unwrap();
        std::fs::create_dir(root.join("sub")).unwrap();
        std::fs::write(root.join("sub/a b.iso"), b"x").unwrap();
        std::os::unix::fs::symlink("/etc/hostname", root.join("out")).unwrap();
        std::os::unix::fs::symlink("edge.iso", root.join("in.iso")).unwrap();
        assert_eq!(resolve(&root, "/edge.iso"), Some(root.join("edge.iso")));
        assert_eq!(resolve(&root, "/edge.iso?x=1"), Some(root.join("edge.iso")));
        assert_eq!(
            resolve(&root, "/sub/a%20b.iso"),
            Some(root.join("sub/a b.iso"))
        );
        assert_eq!(resolve(&root, "/in.iso"), Some(root.join("edge.iso")));
        for bad in [
            "/../etc/passwd",
            "/%2e%2e/etc/passwd",
            "/sub/../../etc/passwd",
            "/.hidden",
            "/out",
            "/sub",
            "/",
            "edge.iso",
            "/%zz",
            "/nope.iso",
        ] {
            assert_eq!(resolve(&root, bad), None, "{bad}");
        }
    }
}
