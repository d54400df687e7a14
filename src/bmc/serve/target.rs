//! Which file a request names: the path is percent-decoded and must stay
//! inside the served directory. No dot-files (nor `..`), no backslashes or
//! NULs, and symbolic links are judged by where they end up, so a link
//! pointing out of the directory serves nothing.

use std::path::{Path, PathBuf};

/// The file a request target names, if it is a regular file inside `root`.
pub fn resolve(root: &Path, target: &str) -> Option<PathBuf> {
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

#[cfg(test)]
mod tests {
    use super::*;

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
