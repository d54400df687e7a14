//! The guest's initramfs format: a reproducible cpio "newc" archive of
//! directories, files, symlinks and device nodes.

/// One member of an initramfs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpioEntry {
    pub name: String,
    pub mode: u32,
    pub data: Vec<u8>,
    pub rdev: (u32, u32),
}

impl CpioEntry {
    pub fn dir(name: &str) -> CpioEntry {
        CpioEntry {
            name: name.into(),
            mode: 0o040755,
            data: Vec::new(),
            rdev: (0, 0),
        }
    }
    pub fn file(name: &str, perm: u32, data: Vec<u8>) -> CpioEntry {
        CpioEntry {
            name: name.into(),
            mode: 0o100000 | perm,
            data,
            rdev: (0, 0),
        }
    }
    pub fn symlink(name: &str, target: &str) -> CpioEntry {
        CpioEntry {
            name: name.into(),
            mode: 0o120777,
            data: target.as_bytes().to_vec(),
            rdev: (0, 0),
        }
    }
    pub fn char_device(name: &str, major: u32, minor: u32) -> CpioEntry {
        CpioEntry {
            name: name.into(),
            mode: 0o020600,
            data: Vec::new(),
            rdev: (major, minor),
        }
    }
}

/// A cpio archive in the "newc" format the kernel unpacks as an initramfs.
/// Owner root, time 0: the same inputs give the same bytes.
pub fn newc_archive(entries: &[CpioEntry]) -> Vec<u8> {
    fn pad(out: &mut Vec<u8>) {
        while !out.len().is_multiple_of(4) {
            out.push(0);
        }
    }
    let mut out = Vec::new();
    let trailer = CpioEntry::file("TRAILER!!!", 0, Vec::new());
    for (ino, e) in entries.iter().chain([&trailer]).enumerate() {
        let is_trailer = e.name == "TRAILER!!!";
        let fields = [
            if is_trailer { 0 } else { ino as u32 + 1 },
            if is_trailer { 0 } else { e.mode },
            0,
            0,
            if e.mode & 0o170000 == 0o040000 { 2 } else { 1 },
            0,
            e.data.len() as u32,
            0,
            0,
            e.rdev.0,
            e.rdev.1,
            e.name.len() as u32 + 1,
            0,
        ];
        out.extend_from_slice(b"070701");
        for f in fields {
            out.extend_from_slice(format!("{f:08x}").as_bytes());
        }
        out.extend_from_slice(e.name.as_bytes());
        out.push(0);
        pad(&mut out);
        out.extend_from_slice(&e.data);
        pad(&mut out);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newc_headers_names_and_padding() {
        let a = newc_archive(&[
            CpioEntry::dir("bin"),
            CpioEntry::file("init", 0o755, b"#!/bin/sh\n".to_vec()),
            CpioEntry::symlink("bin/sh", "busybox"),
            CpioEntry::char_device("dev/console", 5, 1),
        ]);
        assert_eq!(a.len() % 4, 0);
        // Walk the archive back: every header, name and body where the
        // format says.
        let mut at = 0;
        let mut names = Vec::new();
        loop {
            let h = std::str::from_utf8(&a[at..at + 110]).unwrap();
            assert!(h.starts_with("070701"), "{h}");
            let field = |i: usize| u32::from_str_radix(&h[6 + 8 * i..14 + 8 * i], 16).unwrap();
            let (mode, size, rmaj, rmin, namesize) =
                (field(1), field(6), field(9), field(10), field(11));
            let name = std::str::from_utf8(&a[at + 110..at + 110 + namesize as usize - 1])
                .unwrap()
                .to_string();
            at = (at + 110 + namesize as usize).div_ceil(4) * 4;
            let body = &a[at..at + size as usize];
            at = (at + size as usize).div_ceil(4) * 4;
            match name.as_str() {
                "init" => assert_eq!((mode, body), (0o100755, &b"#!/bin/sh\n"[..])),
                "bin/sh" => assert_eq!((mode, body), (0o120777, &b"busybox"[..])),
                "dev/console" => assert_eq!((mode, rmaj, rmin), (0o020600, 5, 1)),
                _ => {}
            }
            names.push(name);
            if names.last().unwrap() == "TRAILER!!!" {
                break;
            }
        }
        assert_eq!(at, a.len());
        assert_eq!(
            names,
            ["bin", "init", "bin/sh", "dev/console", "TRAILER!!!"]
        );
    }
}
