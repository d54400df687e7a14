//! A release file fetched from the join service in pieces: appended to a
//! `.part` file that survives a cut (the next try goes on from its size),
//! checked against the size and SHA-256 the release names, and put in
//! place only then. A file already in place with the right digest is not
//! fetched again.

use crate::host::{FileSpec, Files};
use anyhow::{Context, Result, bail};

/// Where a file comes from.
pub trait Source {
    /// A piece of `name` from byte `offset`: its bytes and the file's
    /// whole size.
    fn piece(&self, name: &str, offset: u64) -> Result<(Vec<u8>, u64)>;
}

/// What a file must be.
pub struct Wanted<'a> {
    pub name: &'a str,
    pub size: u64,
    pub sha256: &'a str,
}

/// Make `dest` the file `wanted` (fetched from `source` unless it is
/// there already); whether it was fetched.
pub fn fetch(
    files: &Files,
    source: &dyn Source,
    wanted: &Wanted,
    dest: &str,
    spec: &FileSpec,
) -> Result<bool> {
    if files.size(dest)? == Some(wanted.size)
        && files.sha256(dest)?.as_deref() == Some(wanted.sha256)
    {
        return Ok(false);
    }
    let part = format!("{dest}.part");
    let mut offset = files.size(&part)?.unwrap_or(0);
    if offset > wanted.size {
        files.remove(&part)?;
        offset = 0;
    }
    while offset < wanted.size {
        let (bytes, size) = source.piece(wanted.name, offset)?;
        if size != wanted.size {
            bail!(
                "{} is {size} bytes at the control plane, not the {} its release names: the release changed; ask for the orders again",
                wanted.name,
                wanted.size
            );
        }
        if bytes.is_empty() {
            bail!(
                "{}: the join service sent nothing from byte {offset}",
                wanted.name
            );
        }
        files.append(&part, &bytes, spec)?;
        offset += bytes.len() as u64;
    }
    let got = files
        .sha256(&part)?
        .with_context(|| format!("{part} vanished"))?;
    if got != wanted.sha256 {
        files.remove(&part)?;
        bail!(
            "{} does not hash as its release says (sha256 {got}, not {}); it was removed and is fetched again on the next try",
            wanted.name,
            wanted.sha256
        );
    }
    files.rename(&part, dest)?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sha2::{Digest, Sha256};
    use std::cell::RefCell;

    /// Serves `data` in pieces of `piece` bytes; fails once after
    /// `fail_after` pieces when set.
    struct Served {
        data: Vec<u8>,
        piece: usize,
        fail_after: RefCell<Option<usize>>,
        asked: RefCell<Vec<u64>>,
    }

    impl Source for Served {
        fn piece(&self, _name: &str, offset: u64) -> Result<(Vec<u8>, u64)> {
            self.asked.borrow_mut().push(offset);
            let fail_after = *self.fail_after.borrow();
            if let Some(n) = fail_after
                && self.asked.borrow().len() > n
            {
                *self.fail_after.borrow_mut() = None;
                bail!("the link is cut");
            }
            let start = offset as usize;
            let end = (start + self.piece).min(self.data.len());
            Ok((self.data[start..end].to_vec(), self.data.len() as u64))
        }
    }

    #[test]
    fn a_cut_download_goes_on_from_where_it_stopped_and_is_checked() {
        let root = tempfile::tempdir().unwrap();
        let files = Files::new(root.path(), false);
        let data: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        let sha = hex::encode(Sha256::digest(&data));
        let served = Served {
            data: data.clone(),
            piece: 3000,
            fail_after: RefCell::new(Some(2)),
            asked: RefCell::new(vec![]),
        };
        let wanted = Wanted {
            name: "x.deb",
            size: data.len() as u64,
            sha256: &sha,
        };
        let spec = FileSpec::public();
        let e = fetch(&files, &served, &wanted, "/r/x.deb", &spec).unwrap_err();
        assert!(e.to_string().contains("cut"), "{e}");
        assert_eq!(files.size("/r/x.deb.part").unwrap(), Some(6000));
        assert!(fetch(&files, &served, &wanted, "/r/x.deb", &spec).unwrap());
        assert_eq!(*served.asked.borrow(), [0, 3000, 6000, 6000, 9000]);
        assert_eq!(files.read("/r/x.deb").unwrap().unwrap(), data);
        assert!(!files.exists("/r/x.deb.part").unwrap());
        // There already: nothing asked.
        assert!(!fetch(&files, &served, &wanted, "/r/x.deb", &spec).unwrap());
        assert_eq!(served.asked.borrow().len(), 5);
    }

    #[test]
    fn a_file_that_does_not_hash_or_size_as_named_is_refused_and_dropped() {
        let root = tempfile::tempdir().unwrap();
        let files = Files::new(root.path(), false);
        let served = Served {
            data: b"tampered".to_vec(),
            piece: 100,
            fail_after: RefCell::new(None),
            asked: RefCell::new(vec![]),
        };
        let other = hex::encode(Sha256::digest(b"original"));
        let wanted = Wanted {
            name: "dcn",
            size: 8,
            sha256: &other,
        };
        let e = fetch(&files, &served, &wanted, "/r/dcn", &FileSpec::public()).unwrap_err();
        assert!(e.to_string().contains("does not hash"), "{e}");
        assert!(!files.exists("/r/dcn").unwrap() && !files.exists("/r/dcn.part").unwrap());
        let wrong_size = Wanted {
            name: "dcn",
            size: 5,
            sha256: &other,
        };
        let e = fetch(&files, &served, &wrong_size, "/r/dcn", &FileSpec::public()).unwrap_err();
        assert!(e.to_string().contains("the release changed"), "{e}");
    }
}
