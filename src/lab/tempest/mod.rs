//! `dcn lab tempest`: OpenStack's own test suite against the lab's cloud,
//! the way OpenStack's deployment projects gate their changes. Debian 12's
//! tempest (33.0.0, the Zed release, from the lab's package repository) is
//! installed in the control plane's container; its `tempest.conf` is
//! written from what the cloud reports ([`conf`]); the run takes a
//! selection (`--smoke`, regexes), skips the tests of the exclusion list
//! (`exclude.txt` beside this file: each with its reason), and can send
//! every server Tempest boots to an edge site's zone (nova's default zone
//! for the run), so an edge host is exercised too. The summary
//! ([`summary`]) is printed and kept in `DIR/tempest/`.

pub mod conf;
pub mod summary;

use super::nsenter::ContainerRunner;
use super::state::LabState;
use crate::host::apt::Apt;
use crate::host::systemd::Systemd;
use crate::host::{Cmd, FileSpec, Files, Runner};
use crate::types::PackageSource;
use anyhow::{Context, Result, bail};
use conf::{CloudFacts, WORKSPACE};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
pub use summary::Summary;

/// What `dcn lab tempest` installs in the control plane (the lab's
/// repository holds them).
pub const PACKAGES: [&str; 2] = ["tempest", "python3-subunit"];

/// Tests that cannot pass on Zed or on these machines, with the reason.
pub const EXCLUDE: &str = include_str!("exclude.txt");

/// The second flavor Tempest needs (resize and rebuild tests).
const FLAVOR_ALT: &str = "dcn.guest.alt";
/// The drop-in that points nova's default zone at an edge site for a run.
const ZONE_DROP_IN: &str = "/etc/nova/nova.conf.d/95-dcn-lab-tempest.conf";

/// What to run.
#[derive(Debug, Clone)]
pub struct TempestOptions {
    pub dir: PathBuf,
    /// Tempest's smoke tests.
    pub smoke: bool,
    /// Tests whose ids match any of these.
    pub regexes: Vec<String>,
    /// Every server Tempest boots goes to this zone (an edge site).
    pub zone: Option<String>,
    pub concurrency: u32,
}

/// Install Tempest in the lab's control plane if needed, configure it from
/// the cloud, run the selection, and summarise.
pub fn run(opts: &TempestOptions) -> Result<Summary> {
    super::require_root()?;
    if !opts.smoke && opts.regexes.is_empty() {
        bail!("choose what to run: --smoke, or --regex (e.g. '^tempest\\.api\\.identity')");
    }
    let (host_files, dir) = (Files::new("/", false), &super::absolute(&opts.dir)?);
    let state = LabState::load(&host_files, dir)?
        .with_context(|| format!("no lab in {}; start one with `dcn lab up`", dir.display()))?;
    let cp = state.host("cp")?;
    let init = cp
        .init_pid
        .filter(|p| super::container::alive(*p))
        .context("the lab's control plane is not running")?;
    let runner = ContainerRunner::new(init);
    let files = Files::new(&cp.rootfs, false);
    install(&runner, &files)?;
    let facts = gather(&runner, &files)?;
    if !files.exists(format!("{WORKSPACE}/.stestr.conf"))? {
        // `tempest init` refuses a directory that is not empty: a
        // workspace whose init was cut short starts again.
        files.remove_all(WORKSPACE)?;
        run_in(
            &runner,
            "creating Tempest's workspace",
            &["tempest", "init", WORKSPACE],
            300,
        )?;
    }
    files.write(
        format!("{WORKSPACE}/etc/tempest.conf"),
        conf::render(&facts).as_bytes(),
        &FileSpec::secret(),
    )?;
    let exclude = format!("{WORKSPACE}/etc/dcn-exclude.txt");
    files.write(&exclude, EXCLUDE.as_bytes(), &FileSpec::public())?;

    let selection = match (&opts.zone, opts.smoke) {
        (Some(z), true) => format!("smoke, servers in zone {z}"),
        (None, true) => "smoke".to_string(),
        (Some(z), false) => format!("{}, servers in zone {z}", opts.regexes.join(" ")),
        (None, false) => opts.regexes.join(" "),
    };
    if let Some(zone) = &opts.zone {
        set_default_zone(&runner, &files, Some(zone))?;
    }
    let started = Instant::now();
    let ran = run_tempest(&runner, opts, &exclude);
    if opts.zone.is_some() {
        set_default_zone(&runner, &files, None)?;
    }
    ran?;
    let csv = run_in(
        &runner,
        "reading the run's results",
        &[
            "sh",
            "-c",
            // subunit2csv exits 1 when the run had a failure: that is
            // what the summary is for, not an error here.
            &format!("cd {WORKSPACE} && stestr last --subunit | subunit2csv; [ $? -le 1 ]"),
        ],
        300,
    )?;
    let mut summary = Summary::from_csv(&selection, &csv);
    summary.seconds = started.elapsed().as_secs_f64();
    summary.excluded = summary::exclusions(EXCLUDE);
    keep(&host_files, dir, &summary)?;
    Ok(summary)
}

/// `tempest run` with the selection and the exclusion list. Its exit
/// status says only whether a test failed: the summary says which.
fn run_tempest(runner: &dyn Runner, opts: &TempestOptions, exclude: &str) -> Result<()> {
    let mut args = vec![
        "run".to_string(),
        // Its own config file, named: `tempest run` otherwise looks for
        // one by workspace registration or the current directory.
        "--config-file".into(),
        format!("{WORKSPACE}/etc/tempest.conf"),
        "--concurrency".into(),
        opts.concurrency.max(1).to_string(),
        "--exclude-list".into(),
        exclude.to_string(),
    ];
    if opts.smoke {
        args.push("--smoke".into());
    }
    for r in &opts.regexes {
        args.push("--regex".into());
        args.push(r.clone());
    }
    let out = runner.run(
        &Cmd::new("running Tempest", "tempest")
            .args(args)
            .cwd(Path::new(WORKSPACE))
            .timeout(Duration::from_secs(4 * 3600))
            .unchecked(),
    )?;
    let tail = crate::host::command::tail_lines(&out.stdout, 15);
    tracing::info!("tempest run ended ({:?}):\n{tail}", out.code);
    if out.stdout.contains("No tests were successful") && !out.stdout.contains("Totals") {
        bail!(
            "tempest ran no test:\n{}",
            crate::host::command::tail_lines(&out.stderr, 20)
        );
    }
    Ok(())
}

/// Debian's tempest from the lab's repository (once).
fn install(runner: &dyn Runner, files: &Files) -> Result<()> {
    let apt = Apt::new(
        runner,
        files,
        PackageSource::Local(super::REPO_MOUNT.into()),
    );
    let wanted: Vec<String> = PACKAGES.iter().map(|p| p.to_string()).collect();
    let missing = apt.missing(&wanted)?;
    if !missing.is_empty() {
        tracing::info!("installing {} in the control plane", missing.join(", "));
        apt.install(&missing, false)?;
    }
    Ok(())
}

/// What the cloud reports, read in the control plane with the admin's
/// credentials.
fn gather(runner: &dyn Runner, files: &Files) -> Result<CloudFacts> {
    let openrc = files
        .read_secret(crate::centre::standalone::finalize::OPENRC)?
        .context("the control plane has no admin-openrc: is `dcn standalone init` finished?")?;
    let var = |name: &str| -> Result<String> {
        openrc
            .lines()
            .find_map(|l| l.strip_prefix(&format!("export {name}=")))
            .map(|v| v.trim().to_string())
            .with_context(|| format!("{name} is not in the control plane's admin-openrc"))
    };
    let auth_url = var("OS_AUTH_URL")?;
    let address = auth_url
        .trim_start_matches("https://")
        .split(':')
        .next()
        .unwrap_or_default()
        .to_string();
    let os = |what: &str, args: &[&str]| -> Result<String> {
        Ok(runner
            .run(
                &Cmd::new(what, "openstack")
                    .args(args.iter().copied())
                    .env("OS_CLOUD", "dcn")
                    .timeout(Duration::from_secs(300)),
            )?
            .stdout
            .trim()
            .to_string())
    };
    let id = |kind: &str, name: &str| {
        os(
            &format!("finding the {kind} {name}"),
            &[kind, "show", name, "-f", "value", "-c", "id"],
        )
    };
    let image = id("image", super::guest::upload::IMAGE)?;
    let flavor = id("flavor", super::guest::upload::FLAVOR)?;
    let flavor_alt = match id("flavor", FLAVOR_ALT) {
        Ok(f) => f,
        Err(_) => os(
            "creating Tempest's second flavor",
            &[
                "flavor", "create", "--ram", "192", "--disk", "1", "--vcpus", "1", "--public",
                "-f", "value", "-c", "id", FLAVOR_ALT,
            ],
        )?,
    };
    let network_extensions = os(
        "listing neutron's extensions",
        &[
            "extension",
            "list",
            "--network",
            "-f",
            "value",
            "-c",
            "Alias",
        ],
    )?
    .lines()
    .map(|l| l.trim().to_string())
    .filter(|l| !l.is_empty())
    .collect();
    let scheduler_filters = nova_option(files, "filter_scheduler", "enabled_filters")?
        .map(|v| v.split(',').map(|f| f.trim().to_string()).collect())
        .unwrap_or_default();
    Ok(CloudFacts {
        address,
        region: var("OS_REGION_NAME")?,
        admin_password: var("OS_PASSWORD")?,
        image,
        flavor,
        flavor_alt,
        network_extensions,
        scheduler_filters,
    })
}

/// An option as dcn configured nova (its main drop-in).
fn nova_option(files: &Files, section: &str, key: &str) -> Result<Option<String>> {
    let Some(text) = files.read_string("/etc/nova/nova.conf.d/10-dcn.conf")? else {
        return Ok(None);
    };
    let ini = crate::ini::Ini::parse(&text).map_err(|e| anyhow::anyhow!("nova's drop-in: {e}"))?;
    Ok(ini.get(section, key).map(String::from))
}

/// Point nova's default zone at `zone` for a run (a drop-in that wins over
/// dcn's own), or back to dcn's (`None`); nova-api reads it on restart.
fn set_default_zone(runner: &dyn Runner, files: &Files, zone: Option<&str>) -> Result<()> {
    let changed = match zone {
        Some(z) => files
            .write(
                ZONE_DROP_IN,
                format!("# Written by dcn lab tempest for one run.\n[DEFAULT]\ndefault_schedule_zone = {z}\n").as_bytes(),
                &FileSpec::public(),
            )?
            .changed(),
        None => files.remove(ZONE_DROP_IN)?.changed(),
    };
    if changed {
        Systemd::new(runner).restart("nova-api.service")?;
    }
    Ok(())
}

/// A command in the control plane; its stdout.
fn run_in(runner: &dyn Runner, what: &str, argv: &[&str], seconds: u64) -> Result<String> {
    Ok(runner
        .run(
            &Cmd::new(what, argv[0])
                .args(argv[1..].iter().copied())
                .cwd(Path::new("/"))
                .timeout(Duration::from_secs(seconds)),
        )?
        .stdout)
}

/// Keep the summary beside the lab's report: `DIR/tempest/summary.json`
/// (the latest run) and one file per run.
fn keep(files: &Files, dir: &Path, summary: &Summary) -> Result<()> {
    let out = dir.join("tempest");
    let text = serde_json::to_string_pretty(summary)? + "\n";
    let stamp = crate::timefmt::rfc3339(std::time::SystemTime::now()).replace(':', "");
    for name in [format!("summary-{stamp}.json"), "summary.json".to_string()] {
        files.write(out.join(name), text.as_bytes(), &FileSpec::public())?;
    }
    Ok(())
}
