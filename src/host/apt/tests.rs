use super::*;
use crate::host::{CmdOutput, RecordingRunner};

#[test]
fn missing_reads_dpkg_status() {
    let r = RecordingRunner::answering(|_| {
        CmdOutput::ok("keystone installed\nnova-api not-installed\n")
    });
    let dir = tempfile::tempdir().unwrap();
    let files = Files::new(dir.path(), false);
    let apt = Apt::new(&r, &files, PackageSource::Mirror);
    let wanted = vec![
        "keystone".to_string(),
        "nova-api".to_string(),
        "glance".to_string(),
    ];
    assert_eq!(apt.missing(&wanted).unwrap(), vec!["nova-api", "glance"]);
}

#[test]
fn install_uses_policy_rc_d_and_removes_it_even_on_failure() {
    let dir = tempfile::tempdir().unwrap();
    let files = Files::new(dir.path(), false);
    let seen = std::sync::Arc::new(std::sync::Mutex::new(false));
    let seen2 = seen.clone();
    let policy = dir.path().join("usr/sbin/policy-rc.d");
    let r = RecordingRunner::answering(move |c| {
        *seen2.lock().unwrap() = policy.exists();
        if c.program == "dpkg" {
            return CmdOutput::ok("");
        }
        CmdOutput::failed(100, "E: Unable to locate package nope")
    });
    let apt = Apt::new(&r, &files, PackageSource::Local("/srv/repo".into()));
    let err = apt.install(&["nope".into()], false).unwrap_err();
    assert!(format!("{err:#}").contains("Unable to locate package"));
    assert!(
        *seen.lock().unwrap(),
        "policy-rc.d existed during the install"
    );
    assert!(!dir.path().join("usr/sbin/policy-rc.d").exists());
    // An install a power cut interrupted is finished first.
    assert_eq!(
        r.command_lines()[0],
        "dpkg --force-confdef --force-confold --configure -a"
    );
    let line = &r.command_lines()[1];
    assert!(
        line.contains("Dir::Etc::sourceparts=-") && line.contains("--no-install-recommends"),
        "{line}"
    );
    assert_eq!(
        r.calls()[1].env,
        vec![("DEBIAN_FRONTEND".to_string(), "noninteractive".to_string())]
    );
}

#[test]
fn downloads_resolve_against_another_roots_status_and_install_nothing() {
    let r = RecordingRunner::new();
    let p = std::path::Path::new;
    let d = Download {
        runner: &r,
        state: p("/c/apt-state"),
        cache: p("/c/apt-cache"),
        archives: p("/c/repo"),
        installed_in: p("/c/base"),
    };
    d.refresh().unwrap();
    d.upgrades().unwrap();
    d.packages(&["nova-compute".into(), "ovn-host".into()])
        .unwrap();
    let lines = r.command_lines();
    assert!(lines[0].ends_with("-q update"), "{}", lines[0]);
    for l in &lines[1..] {
        assert!(
            l.contains("Dir::State::status=/c/base/var/lib/dpkg/status")
                && l.contains("Dir::Cache::archives=/c/repo/")
                && l.contains("Debug::NoLocking=true")
                && l.contains("--download-only"),
            "{l}"
        );
    }
    assert!(lines[1].ends_with("--download-only dist-upgrade"));
    assert!(lines[2].ends_with("--download-only install nova-compute ovn-host"));
}

#[test]
fn purge_clean_and_single_debs() {
    let dir = tempfile::tempdir().unwrap();
    let files = Files::new(dir.path(), false);
    let r = RecordingRunner::new();
    let apt = Apt::new(&r, &files, PackageSource::Mirror);
    apt.purge(&["keystone".into()]).unwrap();
    apt.clean().unwrap();
    download_debs(&r, &["busybox"], dir.path()).unwrap();
    let lines = r.command_lines();
    assert_eq!(lines[0], "apt-get -q -y purge keystone");
    assert_eq!(lines[1], "apt-get -q -y autoremove --purge");
    assert_eq!(lines[2], "apt-get clean");
    assert!(lines[3].ends_with("-q download busybox"), "{}", lines[3]);
    assert_eq!(r.calls()[3].cwd.as_deref(), Some(dir.path()));
}

#[test]
fn debconf_lines_need_four_words() {
    let a = DebconfAnswer::parse("nova-common nova/configure_db boolean false").unwrap();
    assert_eq!(
        (a.package.as_str(), a.value.as_str()),
        ("nova-common", "false")
    );
    let v = DebconfAnswer::parse("p q string two words").unwrap();
    assert_eq!(v.value, "two words");
    assert!(DebconfAnswer::parse("p q boolean").is_err());
}

#[test]
fn a_local_source_without_an_index_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let files = Files::new(dir.path(), false);
    let r = RecordingRunner::new();
    let apt = Apt::new(&r, &files, PackageSource::Local("/srv/repo".into()));
    let err = apt.update().unwrap_err();
    assert!(format!("{err:#}").contains("has no Packages index"));
    assert!(r.calls().is_empty());
}
