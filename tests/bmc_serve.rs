//! `dcn image serve` over real sockets: whole files and byte ranges (BMCs
//! read ISOs in ranges), HEAD, keep-alive, and refusals: other methods,
//! paths that leave the directory, dot-files, directories.

use dcn::bmc::ImageServer;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;

const LEN: usize = 10_000;

fn content() -> Vec<u8> {
    (0..LEN).map(|i| (i % 251) as u8).collect()
}

/// A server for a directory holding edge.iso, a dot-file, a sub-directory
/// and a link to a file outside.
fn start(dir: &Path) -> SocketAddr {
    std::fs::write(dir.join("edge.iso"), content()).unwrap();
    std::fs::write(dir.join(".secret"), b"no").unwrap();
    std::fs::create_dir(dir.join("sub")).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", dir.join("passwd")).unwrap();
    let server = ImageServer::bind(dir, "127.0.0.1:0".parse().unwrap()).unwrap();
    let addr = server.local_addr().unwrap();
    std::thread::spawn(move || server.run());
    addr
}

struct Response {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Response {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Send `request` (a raw head) and read one response; `head_only` for HEAD.
fn exchange(conn: &mut BufReader<TcpStream>, request: &str, head_only: bool) -> Response {
    conn.get_mut().write_all(request.as_bytes()).unwrap();
    let mut line = String::new();
    conn.read_line(&mut line).unwrap();
    let status = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        conn.read_line(&mut h).unwrap();
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        let (k, v) = h.split_once(':').unwrap();
        headers.push((k.trim().to_string(), v.trim().to_string()));
    }
    let mut r = Response {
        status,
        headers,
        body: Vec::new(),
    };
    if !head_only {
        let len: usize = r.header("Content-Length").unwrap().parse().unwrap();
        r.body = vec![0; len];
        conn.read_exact(&mut r.body).unwrap();
    }
    r
}

fn get(addr: SocketAddr, path: &str, extra: &str) -> Response {
    let mut conn = BufReader::new(TcpStream::connect(addr).unwrap());
    exchange(
        &mut conn,
        &format!("GET {path} HTTP/1.1\r\nHost: x\r\n{extra}Connection: close\r\n\r\n"),
        false,
    )
}

#[test]
fn whole_files_and_byte_ranges() {
    let dir = tempfile::tempdir().unwrap();
    let addr = start(dir.path());
    let all = content();

    let r = get(addr, "/edge.iso", "");
    assert_eq!(r.status, 200);
    assert_eq!(r.body, all);
    assert_eq!(r.header("Accept-Ranges"), Some("bytes"));
    let etag = r.header("ETag").unwrap().to_string();

    let r = get(addr, "/edge.iso", "Range: bytes=2048-4095\r\n");
    assert_eq!(r.status, 206);
    assert_eq!(r.header("Content-Range"), Some("bytes 2048-4095/10000"));
    assert_eq!(r.body, &all[2048..4096]);

    let r = get(addr, "/edge.iso", "Range: bytes=9000-\r\n");
    assert_eq!((r.status, r.body.as_slice()), (206, &all[9000..]));
    let r = get(addr, "/edge.iso", "Range: bytes=-100\r\n");
    assert_eq!((r.status, r.body.as_slice()), (206, &all[9900..]));
    let r = get(addr, "/edge.iso", "Range: bytes=9990-20000\r\n");
    assert_eq!(r.header("Content-Range"), Some("bytes 9990-9999/10000"));

    let r = get(addr, "/edge.iso", "Range: bytes=10000-\r\n");
    assert_eq!(r.status, 416);
    assert_eq!(r.header("Content-Range"), Some("bytes */10000"));

    // Several ranges, or an If-Range that no longer matches: all of it.
    let r = get(addr, "/edge.iso", "Range: bytes=0-1,5-6\r\n");
    assert_eq!((r.status, r.body.len()), (200, LEN));
    let r = get(
        addr,
        "/edge.iso",
        "Range: bytes=0-9\r\nIf-Range: \"old\"\r\n",
    );
    assert_eq!((r.status, r.body.len()), (200, LEN));
    let r = get(
        addr,
        "/edge.iso",
        &format!("Range: bytes=0-9\r\nIf-Range: {etag}\r\n"),
    );
    assert_eq!((r.status, r.body.len()), (206, 10));
}

#[test]
fn head_and_keep_alive() {
    let dir = tempfile::tempdir().unwrap();
    let addr = start(dir.path());
    let mut conn = BufReader::new(TcpStream::connect(addr).unwrap());
    let r = exchange(
        &mut conn,
        "HEAD /edge.iso HTTP/1.1\r\nHost: x\r\n\r\n",
        true,
    );
    assert_eq!(r.status, 200);
    assert_eq!(r.header("Content-Length"), Some("10000"));
    // The same connection serves the next requests.
    let r = exchange(
        &mut conn,
        "GET /edge.iso HTTP/1.1\r\nHost: x\r\nRange: bytes=0-3\r\n\r\n",
        false,
    );
    assert_eq!((r.status, r.body.as_slice()), (206, &content()[..4]));
    let r = exchange(
        &mut conn,
        "GET /edge.iso HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        false,
    );
    assert_eq!(r.status, 200);
    let mut rest = Vec::new();
    conn.read_to_end(&mut rest).unwrap();
    assert!(rest.is_empty(), "closed after Connection: close");
}

#[test]
fn only_reads_of_files_inside_the_directory() {
    let dir = tempfile::tempdir().unwrap();
    let addr = start(dir.path());
    for path in [
        "/../../../../etc/passwd",
        "/%2e%2e/%2e%2e/etc/passwd",
        "/sub/../../etc/passwd",
        "/passwd",
        "/.secret",
        "/sub",
        "/",
        "/missing.iso",
    ] {
        let r = get(addr, path, "");
        assert_eq!(r.status, 404, "{path}");
        assert!(
            !String::from_utf8_lossy(&r.body).contains("root:"),
            "{path}"
        );
    }
    for method in ["PUT", "POST", "DELETE"] {
        let mut conn = BufReader::new(TcpStream::connect(addr).unwrap());
        let r = exchange(
            &mut conn,
            &format!("{method} /edge.iso HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"),
            false,
        );
        assert_eq!(r.status, 405, "{method}");
        assert_eq!(r.header("Allow"), Some("GET, HEAD"));
    }
    assert_eq!(
        std::fs::read(dir.path().join("edge.iso")).unwrap(),
        content()
    );
}

#[test]
fn a_missing_directory_is_an_error() {
    let err = ImageServer::bind(
        Path::new("/nonexistent/images"),
        "127.0.0.1:0".parse().unwrap(),
    )
    .err()
    .unwrap();
    assert!(
        format!("{err:#}").contains("/nonexistent/images: cannot serve it"),
        "{err:#}"
    );
}
