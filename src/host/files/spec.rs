//! How a file dcn writes is kept: its mode, owner and group, and whether
//! its contents are secret (never shown in a diff or a log).

/// Mode and ownership of a file or directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileSpec {
    pub mode: u32,
    pub owner: Option<String>,
    pub group: Option<String>,
    /// Contents are secret: never shown in diffs or logs.
    pub secret: bool,
}

impl FileSpec {
    /// A file anyone may read (0644).
    pub fn public() -> FileSpec {
        FileSpec {
            mode: 0o644,
            owner: None,
            group: None,
            secret: false,
        }
    }

    /// A secret file only its owner may read (0600).
    pub fn secret() -> FileSpec {
        FileSpec {
            mode: 0o600,
            owner: None,
            group: None,
            secret: true,
        }
    }

    /// A private directory (0700).
    pub fn private_dir() -> FileSpec {
        FileSpec {
            mode: 0o700,
            owner: None,
            group: None,
            secret: false,
        }
    }

    /// A directory anyone may enter (0755).
    pub fn public_dir() -> FileSpec {
        FileSpec {
            mode: 0o755,
            ..FileSpec::public()
        }
    }

    pub fn mode(mut self, mode: u32) -> FileSpec {
        self.mode = mode;
        self
    }

    pub fn owner(mut self, owner: &str, group: &str) -> FileSpec {
        self.owner = Some(owner.to_string());
        self.group = Some(group.to_string());
        self
    }

    /// Mark the contents secret (kept out of diffs).
    pub fn hidden(mut self) -> FileSpec {
        self.secret = true;
        self
    }
}
