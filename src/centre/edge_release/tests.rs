use super::*;
use crate::host::command::{Cmd, CmdOutput};
use crate::host::{Host, RecordingRunner};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

/// Package name → the versions the source has files of.
type Source = Arc<Mutex<BTreeMap<String, Vec<String>>>>;

/// A control plane's files, and a stand-in for apt and dpkg on it that
/// answers from `source` (what its package source has) and the dpkg
/// status the test writes: `apt-cache policy` lists the source's
/// versions, `apt-get -s install` adds the newest of each name asked for,
/// `apt-get download` writes a small file per package that `dpkg-deb -f`
/// then describes.
struct Fake {
    root: tempfile::TempDir,
    runner: Arc<RecordingRunner>,
    source: Source,
}

fn deb_name(name: &str, version: &str) -> String {
    format!("{name}_{}_amd64.deb", version.replace(':', "%3a"))
}

fn after(cmd: &Cmd, word: &str) -> Vec<String> {
    cmd.args
        .iter()
        .skip_while(|a| *a != word)
        .skip(1)
        .cloned()
        .collect()
}

impl Fake {
    fn new(source: &[(&str, &[&str])]) -> Fake {
        let root = tempfile::tempdir().unwrap();
        let source: Source = Arc::new(Mutex::new(
            source
                .iter()
                .map(|(n, v)| (n.to_string(), v.iter().map(|v| v.to_string()).collect()))
                .collect(),
        ));
        let src = source.clone();
        let runner = Arc::new(RecordingRunner::answering(move |cmd: &Cmd| {
            let src = src.lock().unwrap();
            match cmd.program.as_str() {
                "dpkg-query" => {
                    CmdOutput::ok("libc6 required installed\nbash required installed\n")
                }
                "apt-cache" => {
                    let mut out = String::new();
                    for name in after(cmd, "policy") {
                        let Some(versions) = src.get(&name) else {
                            continue;
                        };
                        out.push_str(&format!(
                            "{name}:\n  Installed: (none)\n  Candidate: {}\n  Version table:\n",
                            versions.last().unwrap()
                        ));
                        for v in versions {
                            out.push_str(&format!(
                                "     {v} 500\n        500 file:/srv/repo ./ Packages\n"
                            ));
                        }
                    }
                    CmdOutput::ok(out)
                }
                "apt-get" if cmd.args.iter().any(|a| a == "download") => {
                    let dir = cmd.cwd.clone().unwrap();
                    for a in after(cmd, "download") {
                        let (n, v) = a.split_once('=').unwrap();
                        if !src.get(n).is_some_and(|vs| vs.iter().any(|x| x == v)) {
                            return CmdOutput::failed(
                                100,
                                format!(
                                    "E: Can't find a source to download version '{v}' of '{n}'"
                                ),
                            );
                        }
                        std::fs::write(dir.join(deb_name(n, v)), format!("{n} {v}")).unwrap();
                    }
                    CmdOutput::ok("")
                }
                "apt-get" if cmd.args.iter().any(|a| a == "-s") => {
                    let out: String = after(cmd, "install")
                        .iter()
                        .filter_map(|n| {
                            src.get(n).map(|v| {
                                format!("Inst {n} ({} local [amd64])\n", v.last().unwrap())
                            })
                        })
                        .collect();
                    CmdOutput::ok(out)
                }
                "dpkg-deb" => {
                    let file = std::fs::read_to_string(cmd.args.last().unwrap()).unwrap();
                    let (n, v) = file.split_once(' ').unwrap();
                    CmdOutput::ok(format!(
                        "Package: {n}\nVersion: {v}\nArchitecture: amd64\nDescription: {n}\n"
                    ))
                }
                _ => CmdOutput::ok(""),
            }
        }));
        let fake = Fake {
            root,
            runner,
            source,
        };
        let f = &fake.host().files;
        f.write(
            crate::release::RELEASE_FILE,
            format!("{{\"dcnVersion\": \"{}\"}}", crate::release::THIS).as_bytes(),
            &FileSpec::public(),
        )
        .unwrap();
        f.write(
            crate::centre::standalone::controlplane::INSTALLED_BINARY,
            b"the dcn binary",
            &FileSpec::public(),
        )
        .unwrap();
        f.write(
            crate::deployment::CONFIG_FILE,
            b"apiVersion: dcn/v1alpha1\nkind: StandaloneConfig\n",
            &FileSpec::secret(),
        )
        .unwrap();
        fake
    }

    /// dpkg's status: these packages installed (each depending on the
    /// next of `depends`).
    fn installed(&self, packages: &[(&str, &str, &str)]) {
        let status: String = packages
            .iter()
            .map(|(n, v, depends)| {
                format!(
                    "Package: {n}\nStatus: install ok installed\nArchitecture: amd64\nVersion: {v}\nDepends: {depends}\n\n"
                )
            })
            .collect();
        self.host()
            .files
            .write(
                "/var/lib/dpkg/status",
                status.as_bytes(),
                &FileSpec::public(),
            )
            .unwrap();
    }

    fn host(&self) -> Host {
        Host::with_runner(self.root.path(), self.runner.clone(), false)
    }

    /// How many package files were downloaded so far.
    fn downloads(&self) -> usize {
        self.runner
            .calls()
            .iter()
            .map(|c| after(c, "download").len())
            .sum()
    }
}

#[test]
fn a_release_serves_what_the_control_plane_runs_and_is_kept_while_nothing_changes() {
    // ovn-host (an edge package) is installed at 1.0 while the source has
    // 1.1 already: the edges get what the centre runs. libev4 comes with
    // it. libc6 (the base system) is only dpkg's record: the source has
    // no file of it, so edges keep theirs. nova-compute is not installed
    // here: apt's choice is served.
    let fake = Fake::new(&[
        ("ovn-host", &["1.0", "1.1"]),
        ("libev4", &["4.33"]),
        ("nova-compute", &["2:26.2.2"]),
    ]);
    fake.installed(&[
        ("ovn-host", "1.0", "libev4 (>= 4), libc6"),
        ("libev4", "4.33", "libc6"),
        ("libc6", "2.36", ""),
        ("unrelated", "1", ""),
    ]);
    let host = fake.host();
    let first = prepare(crate::recipes::for_tests(), &host).unwrap();
    assert!(first.built && first.previous.is_none());
    let r = &first.release.release;
    assert!(
        r.id.starts_with(&format!("{}-", crate::release::THIS)),
        "{}",
        r.id
    );
    assert_eq!(r.dcn.size, b"the dcn binary".len() as u64);
    let idx = index(&host.files, &r.id).unwrap();
    let versions = idx.versions();
    assert_eq!(versions["ovn-host"], "1.0");
    assert_eq!(versions["libev4"], "4.33");
    assert_eq!(versions["nova-compute"], "2:26.2.2");
    assert!(!versions.contains_key("libc6") && !versions.contains_key("unrelated"));
    assert_eq!(
        (first.release.packages, first.release.not_in_source),
        (3, 1)
    );
    assert_eq!(fake.downloads(), 3);
    // The files it names are served from where they are.
    let path = file_path(&host.files, &r.id, &deb_name("ovn-host", "1.0"))
        .unwrap()
        .unwrap();
    assert_eq!(
        host.files.read_string(&path).unwrap().unwrap(),
        "ovn-host 1.0"
    );
    let e = idx.find("nova-compute", "2:26.2.2").unwrap();
    assert_eq!(e.filename, "nova-compute_2%3a26.2.2_amd64.deb");
    let binary = file_path(&host.files, &r.id, "dcn").unwrap().unwrap();
    assert_eq!(
        host.files.sha256(&binary).unwrap().unwrap(),
        r.dcn.sha256,
        "the binary hashes as the release says"
    );
    assert_eq!(file_path(&host.files, "0.0.0-0000", "dcn").unwrap(), None);

    // Nothing changed: the same release, nothing downloaded again.
    let again = prepare(crate::recipes::for_tests(), &host).unwrap();
    assert!(!again.built);
    assert_eq!(again.release.release.id, r.id);
    assert_eq!(fake.downloads(), 3);
    assert_eq!(current(&host.files).unwrap().unwrap().release.id, r.id);
}

#[test]
fn a_new_version_makes_a_new_release_and_the_one_before_the_previous_goes() {
    let fake = Fake::new(&[
        ("ovn-host", &["1.0", "1:1.1", "1:1.2"]),
        ("libev4", &["4.33"]),
    ]);
    let host = fake.host();
    let ids: Vec<String> = ["1.0", "1:1.1", "1:1.2"]
        .iter()
        .map(|v| {
            // As `dcn upgrade` leaves the control plane.
            fake.installed(&[("ovn-host", v, "libev4"), ("libev4", "4.33", "")]);
            prepare(crate::recipes::for_tests(), &host)
                .unwrap()
                .release
                .release
                .id
        })
        .collect();
    assert_eq!(ids.iter().collect::<BTreeSet<_>>().len(), 3, "{ids:?}");
    // libev4 was fetched once: 1 + 3 ovn-host versions.
    assert_eq!(fake.downloads(), 4);
    assert!(
        find(&host.files, &ids[0]).unwrap().is_none(),
        "the oldest went"
    );
    assert_eq!(previous(&host.files).unwrap().unwrap().release.id, ids[1]);
    assert_eq!(current(&host.files).unwrap().unwrap().release.id, ids[2]);
    let pool = host.files.list(POOL).unwrap();
    assert!(!pool.contains(&deb_name("ovn-host", "1.0")), "{pool:?}");
    assert!(!pool.contains(&format!("{}.stanza", deb_name("ovn-host", "1.0"))));
    assert!(pool.contains(&deb_name("ovn-host", "1:1.1")), "{pool:?}");
    assert!(
        pool.contains(&"ovn-host_1%3a1.2_amd64.deb".to_string()),
        "{pool:?}"
    );
    assert!(pool.contains(&deb_name("libev4", "4.33")));
    fake.source.lock().unwrap().clear();
}

#[test]
fn a_control_plane_not_on_this_dcn_is_refused() {
    let fake = Fake::new(&[("ovn-host", &["1.0"])]);
    fake.installed(&[("ovn-host", "1.0", "")]);
    let host = fake.host();
    host.files
        .write(
            crate::release::RELEASE_FILE,
            b"{\"dcnVersion\": \"0.0.1\"}",
            &FileSpec::public(),
        )
        .unwrap();
    let e = format!(
        "{:#}",
        prepare(crate::recipes::for_tests(), &host).err().unwrap()
    );
    assert!(
        e.contains("runs dcn 0.0.1") && e.contains("run `dcn upgrade` here with this dcn first"),
        "{e}"
    );
    assert!(fake.runner.calls().is_empty(), "nothing was asked of apt");
}

#[test]
fn the_id_follows_the_binary_and_the_index() {
    let a = build::release_for_tests(b"one", "index");
    assert_eq!(a, build::release_for_tests(b"one", "index"));
    assert_ne!(a.id, build::release_for_tests(b"two", "index").id);
    assert_ne!(a.id, build::release_for_tests(b"one", "index2").id);
    assert!(crate::wire::is_release_id(&a.id));
}
