//! The emulator's wheels: sushy-tools and its dependencies for CPython 3.11
//! (Debian 12's python3 in the containers), fetched on this machine once
//! into CACHE/wheelhouse-sushy-VERSION and bound read-only into the BMC
//! container, which installs from it offline. The containers have no route
//! out, and pip in a container would not trust an outbound proxy's CA that
//! only this machine's bundle holds. The target's tags, not this machine's
//! Python, decide what is fetched.

use crate::host::{Cmd, FileSpec, Files, Runner};
use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The emulator's version (tests/bmc_emulator.rs runs the same one).
pub const SUSHY_TOOLS_VERSION: &str = "2.2.0";
/// Written last: the wheelhouse is complete.
const STAMP: &str = ".dcn-complete";

/// The wheelhouse in `cache`, downloaded when missing or incomplete.
pub fn ensure(runner: &dyn Runner, files: &Files, cache: &Path) -> Result<PathBuf> {
    let dir = cache.join(format!("wheelhouse-sushy-{SUSHY_TOOLS_VERSION}"));
    if files.exists(dir.join(STAMP))? && has_sushy(files, &dir) {
        tracing::info!("  using the cached wheelhouse {}", dir.display());
        return Ok(dir);
    }
    let partial = cache.join(format!("wheelhouse-sushy-{SUSHY_TOOLS_VERSION}.partial"));
    for d in [&dir, &partial] {
        files.remove_all(d)?;
    }
    files.create_dir_all(&partial)?;
    runner.run(&download(&partial))?;
    if !has_sushy(files, &partial) {
        bail!(
            "pip downloaded no sushy_tools-{SUSHY_TOOLS_VERSION} wheel into {}",
            partial.display()
        );
    }
    files.write(partial.join(STAMP), b"", &FileSpec::public())?;
    files
        .rename(&partial, &dir)
        .with_context(|| format!("moving the wheelhouse to {}", dir.display()))?;
    Ok(dir)
}

/// `pip download` of binary wheels for CPython 3.11 on manylinux x86_64
/// (2014 = glibc 2.17, and 2.28; Debian 12 has 2.36) into `dest`.
fn download(dest: &Path) -> Cmd {
    Cmd::new(
        "downloading the BMC emulator's wheels (sushy-tools) for the containers",
        "python3",
    )
    .args([
        "-m",
        "pip",
        "download",
        "--quiet",
        "--disable-pip-version-check",
    ])
    .args(["--only-binary=:all:", "--python-version", "3.11"])
    .args(["--implementation", "cp", "--abi", "cp311"])
    .args(["--platform", "manylinux2014_x86_64"])
    .args(["--platform", "manylinux_2_28_x86_64"])
    .arg("--dest")
    .arg(dest.display().to_string())
    .arg(format!("sushy-tools=={SUSHY_TOOLS_VERSION}"))
    .timeout(Duration::from_secs(600))
}

fn has_sushy(files: &Files, dir: &Path) -> bool {
    let prefix = format!("sushy_tools-{SUSHY_TOOLS_VERSION}-");
    files.list(dir).is_ok_and(|names| {
        names
            .iter()
            .any(|name| name.starts_with(&prefix) && name.ends_with(".whl"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::{CmdOutput, RecordingRunner};

    /// A runner whose `pip download` writes `wheels` into its --dest.
    fn pip(wheels: &'static [&'static str]) -> RecordingRunner {
        RecordingRunner::answering(move |cmd| {
            let dest = cmd
                .args
                .iter()
                .position(|a| a == "--dest")
                .map(|i| PathBuf::from(&cmd.args[i + 1]))
                .unwrap();
            for w in wheels {
                std::fs::write(dest.join(w), "").unwrap();
            }
            CmdOutput::ok("")
        })
    }

    #[test]
    fn downloads_once_for_the_containers_python() {
        let cache = tempfile::tempdir().unwrap();
        let r = pip(&[
            "sushy_tools-2.2.0-py3-none-any.whl",
            "flask-3.1.3-py3-none-any.whl",
        ]);
        let dir = ensure(&r, &Files::new("/", false), cache.path()).unwrap();
        assert_eq!(dir, cache.path().join("wheelhouse-sushy-2.2.0"));
        assert!(dir.join("flask-3.1.3-py3-none-any.whl").exists());
        assert!(!cache.path().join("wheelhouse-sushy-2.2.0.partial").exists());
        let line = &r.command_lines()[0];
        for part in [
            "python3 -m pip download",
            "--only-binary=:all: --python-version 3.11 --implementation cp --abi cp311 --platform manylinux2014_x86_64",
            "sushy-tools==2.2.0",
        ] {
            assert!(line.contains(part), "{part} not in {line}");
        }
        // Cached: no second download.
        ensure(&r, &Files::new("/", false), cache.path()).unwrap();
        assert_eq!(r.calls().len(), 1);
    }

    #[test]
    fn a_download_without_the_emulator_is_not_kept() {
        let cache = tempfile::tempdir().unwrap();
        let e = ensure(
            &pip(&["flask-3.1.3-py3-none-any.whl"]),
            &Files::new("/", false),
            cache.path(),
        )
        .unwrap_err();
        assert!(
            format!("{e:#}").contains("no sushy_tools-2.2.0 wheel"),
            "{e:#}"
        );
        assert!(!cache.path().join("wheelhouse-sushy-2.2.0").exists());
        // An interrupted one is started over.
        let r = pip(&["sushy_tools-2.2.0-py3-none-any.whl"]);
        ensure(&r, &Files::new("/", false), cache.path()).unwrap();
        assert!(
            !cache
                .path()
                .join("wheelhouse-sushy-2.2.0/flask-3.1.3-py3-none-any.whl")
                .exists()
        );
    }
}
