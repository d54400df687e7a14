//! The file reader: every file whose path comes from an operator, a config,
//! an inventory, the command line or node state is opened here (the
//! writing counterpart is [`super::files`]). Such a path may name anything:
//! a FIFO whose open waits for a writer forever, `/dev/zero`, which never
//! ends, a directory, a socket. [`open`] refuses all of these before a byte
//! is read: the path's type is looked at before the open (so opening a
//! device has no side effect), the open cannot block (`O_NONBLOCK`), and
//! the type is checked again on the opened descriptor (so a file swapped in
//! between is caught too). Symbolic links are followed, operators use them,
//! but what they lead to must be a regular file. [`read`] then reads at
//! most the limit the caller states for its kind of file ([`ReadSpec`]),
//! and a secret must be private ([`Secrecy`]).

use nix::fcntl::{FcntlArg, OFlag, fcntl};
use std::fs::{File, Metadata};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// A secret file: a password, a node's credentials, a key.
pub const MAX_SECRET: u64 = 64 * 1024;
/// PEM certificates: a CA, a server's chain, the system's CA bundle.
pub const MAX_PEM: u64 = 1024 * 1024;
/// dcn's own state and the system files it manages ([`super::Files::read`]):
/// the largest is a few hundred kilobytes.
pub const MAX_STATE: u64 = 16 * 1024 * 1024;

/// Who may read a file besides the user dcn runs as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Secrecy {
    /// Anyone: not a secret.
    Public,
    /// A secret the operator keeps (a BMC password): no access at all for
    /// group or others. Its owner is the operator's business.
    Private,
    /// A secret dcn keeps for itself (a node's credentials, the control
    /// plane's passwords and keys): private, and owned by root (by the user
    /// dcn runs as), since whoever owns it may read or replace it.
    Own,
}

/// How a file is read: at most `max` bytes, with its secrecy checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadSpec {
    pub max: u64,
    pub secrecy: Secrecy,
    /// A block device is accepted too (an edge ISO on a CD or USB drive).
    pub block_device: bool,
    /// Opened for writing too (an ISO embedded in place).
    pub write: bool,
}

impl ReadSpec {
    /// A public regular file of at most `max` bytes.
    pub const fn up_to(max: u64) -> ReadSpec {
        ReadSpec {
            max,
            secrecy: Secrecy::Public,
            block_device: false,
            write: false,
        }
    }

    /// The operator's secret ([`Secrecy::Private`]).
    pub const fn private(mut self) -> ReadSpec {
        self.secrecy = Secrecy::Private;
        self
    }

    /// dcn's own secret ([`Secrecy::Own`]).
    pub const fn own_secret(mut self) -> ReadSpec {
        self.secrecy = Secrecy::Own;
        self
    }

    /// Accept a block device as well as a regular file.
    pub const fn or_block_device(mut self) -> ReadSpec {
        self.block_device = true;
        self
    }

    /// Open for reading and writing.
    pub const fn writable(mut self) -> ReadSpec {
        self.write = true;
        self
    }
}

/// Why a file was not read. Each message names the path and what to do.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{} does not exist", path.display())]
    NotFound { path: PathBuf },
    #[error(
        "{} is {kind}, not a regular file: name a regular file (a symbolic link to one is fine)",
        path.display()
    )]
    NotRegular { path: PathBuf, kind: &'static str },
    #[error(
        "{} is {}, more than the {max} bytes dcn reads from this kind of file: check that this is the right file",
        path.display(),
        size.map_or("larger".to_string(), |s| format!("{s} bytes"))
    )]
    TooLarge {
        path: PathBuf,
        /// `None` when the file grew while it was read.
        size: Option<u64>,
        max: u64,
    },
    #[error(
        "{} holds a secret, but its mode {mode:03o} lets other users at it: `chmod 600 {}` and run again",
        path.display(),
        path.display()
    )]
    Exposed { path: PathBuf, mode: u32 },
    #[error(
        "{} holds a secret of dcn's, but belongs to uid {uid}, which may read or replace it: check who put it there, then `chown {} {}`",
        path.display(),
        if *expected == 0 { "root:root".to_string() } else { expected.to_string() },
        path.display()
    )]
    NotOwned {
        path: PathBuf,
        uid: u32,
        expected: u32,
    },
    #[error("{} is not UTF-8 text", path.display())]
    NotText { path: PathBuf },
    #[error("{}: {error}", path.display())]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
}

impl ReadError {
    /// The file is not there (a caller may treat that as "none yet").
    pub fn is_not_found(&self) -> bool {
        matches!(self, ReadError::NotFound { .. })
    }

    fn io(path: &Path, error: std::io::Error) -> ReadError {
        match error.kind() {
            std::io::ErrorKind::NotFound => ReadError::NotFound {
                path: path.to_path_buf(),
            },
            _ => ReadError::Io {
                path: path.to_path_buf(),
                error,
            },
        }
    }
}

/// Open `path` as `spec` says, refusing anything but a regular file (or a
/// block device when `spec` allows one), a regular file larger than
/// `spec.max`, and a secret others may read. The file is left in blocking
/// mode, positioned at its start.
pub fn open(path: &Path, spec: &ReadSpec) -> Result<File, ReadError> {
    // The path first: a device is refused before it is opened, since
    // opening some (a watchdog, a tape, a terminal) already does something.
    let before = std::fs::metadata(path).map_err(|e| ReadError::io(path, e))?;
    check_type(path, &before, spec)?;
    let flags = OFlag::O_NONBLOCK | OFlag::O_NOCTTY;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(spec.write)
        .custom_flags(flags.bits())
        .open(path)
        .map_err(|e| ReadError::io(path, e))?;
    // Then what was opened, which is what will be read.
    let meta = file.metadata().map_err(|e| ReadError::io(path, e))?;
    check_type(path, &meta, spec)?;
    if meta.is_file() && meta.len() > spec.max {
        return Err(ReadError::TooLarge {
            path: path.to_path_buf(),
            size: Some(meta.len()),
            max: spec.max,
        });
    }
    check_secrecy(path, &meta, spec.secrecy)?;
    // O_NONBLOCK only kept the open from waiting; reads of a device (an
    // ISO on a CD drive) must wait for their data.
    let blocking = fcntl(&file, FcntlArg::F_GETFL)
        .map(|f| OFlag::from_bits_truncate(f) - OFlag::O_NONBLOCK)
        .and_then(|f| fcntl(&file, FcntlArg::F_SETFL(f)))
        .map_err(|e| ReadError::io(path, e.into()));
    blocking?;
    Ok(file)
}

/// The contents of `path`, [`open`]ed as `spec` says and read to at most
/// `spec.max` bytes (a file that grows past it while read is refused too).
pub fn read(path: &Path, spec: &ReadSpec) -> Result<Vec<u8>, ReadError> {
    let file = open(path, spec)?;
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let mut bytes = Vec::with_capacity(len.min(spec.max) as usize);
    let fits = crate::io::read_at_most_into(file, spec.max, &mut bytes)
        .map_err(|e| ReadError::io(path, e))?;
    if !fits {
        return Err(ReadError::TooLarge {
            path: path.to_path_buf(),
            size: None,
            max: spec.max,
        });
    }
    Ok(bytes)
}

/// [`read`] as UTF-8 text.
pub fn read_string(path: &Path, spec: &ReadSpec) -> Result<String, ReadError> {
    String::from_utf8(read(path, spec)?).map_err(|_| ReadError::NotText {
        path: path.to_path_buf(),
    })
}

fn check_type(path: &Path, meta: &Metadata, spec: &ReadSpec) -> Result<(), ReadError> {
    let t = meta.file_type();
    if t.is_file() || (spec.block_device && t.is_block_device()) {
        return Ok(());
    }
    let kind = if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_dir() {
        "a directory"
    } else {
        "something else"
    };
    Err(ReadError::NotRegular {
        path: path.to_path_buf(),
        kind,
    })
}

fn check_secrecy(path: &Path, meta: &Metadata, secrecy: Secrecy) -> Result<(), ReadError> {
    if secrecy == Secrecy::Public {
        return Ok(());
    }
    let mode = meta.mode() & 0o7777;
    if mode & 0o077 != 0 {
        return Err(ReadError::Exposed {
            path: path.to_path_buf(),
            mode,
        });
    }
    let me = nix::unistd::geteuid().as_raw();
    if secrecy == Secrecy::Own && meta.uid() != me && meta.uid() != 0 {
        return Err(ReadError::NotOwned {
            path: path.to_path_buf(),
            uid: meta.uid(),
            expected: me,
        });
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod testing;
#[cfg(test)]
mod tests;
