//! For tests of every reader of files named from outside: the special
//! files none may read ([`special_files`]), and [`bounded`], which runs a
//! test's body in a child process of the test binary, its address space
//! capped and killed after a deadline, so a reader that hangs on a FIFO or
//! reads `/dev/zero` without end fails its test instead of stalling the
//! suite or exhausting the machine's memory.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// Set in the child: run the body here.
const CHILD: &str = "DCN_TEST_BOUNDED_CHILD";
/// The child's address space, in KiB (`ulimit -v`): far above what a test
/// needs, far below the machine's memory.
const MEMORY_KIB: u64 = 4 * 1024 * 1024;

/// Run `body` in a child process (this test again, alone), failing the
/// calling test if it fails, or does not end within `limit`.
pub fn bounded(limit: Duration, body: impl FnOnce()) {
    if std::env::var_os(CHILD).is_some() {
        body();
        return;
    }
    // libtest runs each test on a thread named after it.
    let name = std::thread::current()
        .name()
        .expect("a test thread has the test's name")
        .to_string();
    let dir = tempfile::tempdir().unwrap();
    let (out, err) = (dir.path().join("out"), dir.path().join("err"));
    let mut child = Command::new("/bin/sh")
        .arg("-c")
        .arg(format!("ulimit -v {MEMORY_KIB} && exec \"$0\" \"$@\""))
        .arg(std::env::current_exe().unwrap())
        .args([&name, "--exact", "--test-threads=1", "--nocapture"])
        .env(CHILD, "1")
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if started.elapsed() > limit {
            child.kill().unwrap();
            child.wait().unwrap();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let output = format!(
        "--- stdout\n{}--- stderr\n{}",
        std::fs::read_to_string(&out).unwrap_or_default(),
        std::fs::read_to_string(&err).unwrap_or_default()
    );
    match status {
        None => {
            panic!("{name} did not finish within {limit:?} (hung or read without end)\n{output}")
        }
        Some(s) => assert!(
            s.success() && output.contains("1 passed"),
            "{name} failed in its child process ({s})\n{output}"
        ),
    }
}

/// A file no reader may read.
#[derive(Debug, Clone, Copy)]
pub enum Special {
    Fifo,
    /// A symbolic link to `/dev/zero`.
    DevZero,
    Socket,
    Dir,
    /// A regular file (mode 0600) one byte over the reader's limit.
    Oversize,
}

impl Special {
    pub const ALL: [Special; 5] = [
        Special::Fifo,
        Special::DevZero,
        Special::Socket,
        Special::Dir,
        Special::Oversize,
    ];

    /// Make it at `path` (its parent exists), for a reader of at most
    /// `max` bytes; returns what the refusal says right after the path.
    pub fn make(self, path: &Path, max: u64) -> String {
        use std::os::unix::fs::PermissionsExt;
        let kind = match self {
            Special::Fifo => {
                let mode = nix::sys::stat::Mode::from_bits_truncate(0o600);
                nix::unistd::mkfifo(path, mode).unwrap();
                "a FIFO"
            }
            Special::DevZero => {
                std::os::unix::fs::symlink("/dev/zero", path).unwrap();
                "a character device"
            }
            Special::Socket => {
                std::os::unix::net::UnixListener::bind(path).unwrap();
                "a socket"
            }
            Special::Dir => {
                std::fs::create_dir(path).unwrap();
                "a directory"
            }
            Special::Oversize => {
                std::fs::write(path, vec![b'a'; max as usize + 1]).unwrap();
                let private = std::fs::Permissions::from_mode(0o600);
                std::fs::set_permissions(path, private).unwrap();
                return format!("is {} bytes, more than the {max} bytes dcn reads", max + 1);
            }
        };
        format!("is {kind}, not a regular file")
    }
}

/// Each [`Special`] file made in `dir`, with its path and what its
/// refusal says, path first.
pub fn special_files(dir: &Path, max: u64) -> Vec<(PathBuf, String)> {
    Special::ALL
        .iter()
        .enumerate()
        .map(|(i, special)| {
            let path = dir.join(format!("special-{i}"));
            let why = special.make(&path, max);
            let why = format!("{} {why}", path.display());
            (path, why)
        })
        .collect()
}
