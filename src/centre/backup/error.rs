//! Why a backup archive is refused: each names what is wrong and what to
//! do, and none is raised after anything on the host changed.

/// A refused archive.
#[derive(Debug, thiserror::Error)]
pub enum BackupError {
    #[error("cannot read the backup: {0}")]
    Open(String),
    #[error("the backup is truncated: {0}; copy it again from where it was kept")]
    Truncated(String),
    #[error("the backup is corrupt: {0}; copy it again from where it was kept")]
    Corrupt(String),
    #[error("the backup is not laid out as dcn writes it: {0}")]
    Layout(String),
    #[error("the backup's member {member} is refused: {why}")]
    BadMember { member: String, why: String },
    #[error("the backup lacks {0}, which its manifest lists; it is truncated or was tampered with")]
    MissingMember(String),
    #[error(
        "the backup's member {0} does not match its manifest (size or SHA-256): it is corrupt or was tampered with"
    )]
    Digest(String),
    #[error("the backup's manifest is refused: {0}")]
    Manifest(String),
    #[error("the backup was written by a newer dcn ({0}); restore it with that dcn or a later one")]
    Newer(String),
    #[error("the backup's manifest does not verify against the CA it holds: it was tampered with")]
    Signature,
    #[error(
        "the backup is of another cloud: its CA is {found}, not {expected} (`dcn ca status` on the cloud it came from prints its pin)"
    )]
    PinMismatch { expected: String, found: String },
    #[error("extracting the backup: {0}")]
    Extract(String),
}
