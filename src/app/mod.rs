//! One library call per subcommand: [`run`] maps the parsed command line
//! onto the library and prints results on stdout.

mod sites;

use crate::cli::*;
use anyhow::{Context, Result};
use std::process::ExitCode;

/// Run a parsed command line.
pub fn run(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        Command::Config(ConfigCommand::Defaults) => {
            print!("{}", crate::config::STANDALONE_DEFAULTS);
            Ok(ExitCode::SUCCESS)
        }
        Command::Config(ConfigCommand::Validate { file }) => {
            println!("{}", crate::config::validate_file(&file)?);
            Ok(ExitCode::SUCCESS)
        }
        Command::Preflight(args) => preflight(args),
        Command::Bundle(cmd) => bundle(cmd),
        Command::Standalone(StandaloneCommand::Init(args)) => standalone_init(args),
        Command::Lab(cmd) => lab(cmd),
        Command::Join(args) => join(args),
        Command::Serve => {
            crate::serve::run(crate::host::Host::system("/", false))?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Site(cmd) => sites::site(cmd),
        Command::Node(cmd) => sites::node(cmd),
        Command::Bmc(cmd) => crate::bmc::run(cmd),
        Command::Image(cmd) => crate::image::run(cmd),
        Command::Install(args) => crate::image::install(args),
        Command::Status { output } => {
            let host = crate::host::Host::system("/", false);
            let status = crate::status::status(&host)?;
            match output {
                OutputFormat::Text => println!("{status}"),
                OutputFormat::Json => println!("{}", serde_json::to_string_pretty(&status)?),
            }
            Ok(if status.ok {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            })
        }
        Command::Reset { purge, yes } => reset(purge, yes),
        Command::Completions(args) => {
            clap_complete::generate(args.shell, &mut command(), "dcn", &mut std::io::stdout());
            Ok(ExitCode::SUCCESS)
        }
        Command::Man(args) => {
            std::fs::create_dir_all(&args.out_dir)
                .with_context(|| format!("creating {}", args.out_dir.display()))?;
            for (name, text) in man::pages() {
                let path = args.out_dir.join(&name);
                std::fs::write(&path, text)
                    .with_context(|| format!("writing {}", path.display()))?;
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn load_config(path: Option<&std::path::Path>) -> Result<crate::config::StandaloneConfig> {
    match path {
        Some(p) => crate::config::load_standalone(p),
        None => Ok(crate::config::StandaloneConfig::default()),
    }
}

fn preflight(args: PreflightArgs) -> Result<ExitCode> {
    use crate::preflight::{Params, Role};
    let role = match args.role {
        HostRole::Standalone => Role::Standalone,
        HostRole::Edge => Role::Edge,
    };
    let params = match (&args.config, role) {
        (Some(path), _) => Params::from_config(&crate::config::load_standalone(path)?),
        (None, Role::Standalone) => {
            Params::from_config(&crate::config::StandaloneConfig::default())
        }
        (None, Role::Edge) => Params::default(),
    };
    let ignore = crate::preflight::parse_ignore(&args.ignore_preflight_errors)?;
    let report = crate::preflight::run(role, std::path::Path::new("/"), &params, &ignore)?;
    match args.output {
        OutputFormat::Text => println!("{report}"),
        OutputFormat::Json => println!("{}", serde_json::to_string_pretty(&report)?),
    }
    Ok(if report.has_errors() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

fn bundle(cmd: BundleCommand) -> Result<ExitCode> {
    use crate::bundle::{ReadOptions, read_bundle_file};
    match cmd {
        BundleCommand::Export {
            site,
            ttl,
            max_uses,
            output,
        } => {
            let host = crate::host::Host::system("/", false);
            let e = crate::sites::export::export(
                &host,
                &crate::sites::export::ExportOptions {
                    site: site.clone(),
                    ttl,
                    max_uses,
                    output,
                },
            )?;
            if e.site_created {
                println!(
                    "Created site {site}: availability zone and host aggregate {site}, with its own credentials."
                );
            }
            let left = crate::timefmt::rough(
                e.not_after
                    .duration_since(std::time::SystemTime::now())
                    .unwrap_or_default(),
            );
            println!(
                "Wrote {} (0600): for {} host(s), valid for {left}. It is a secret: copy it to the edge host over a trusted channel.",
                e.path.display(),
                e.max_uses
            );
            println!("CA pin: {}", e.pin);
            println!(
                "On the edge host: dcn join {} --ca-pin {}",
                e.path.display(),
                e.pin
            );
            Ok(ExitCode::SUCCESS)
        }
        BundleCommand::Inspect { file, output } => {
            // Inspect shows an expired bundle (marked expired) rather than
            // refusing it; every other check still applies.
            let opts = ReadOptions {
                check_expiry: false,
                ..ReadOptions::new()
            };
            let bundle = read_bundle_file(&file, &opts)?;
            let inspection = bundle.inspect();
            match output {
                OutputFormat::Text => println!("{inspection}"),
                OutputFormat::Json => println!("{}", serde_json::to_string_pretty(&inspection)?),
            }
            if !bundle.pin_checked {
                tracing::warn!(
                    "the CA pin was not checked: compare it with the one `dcn bundle export` printed"
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        BundleCommand::Verify { file, ca_pin } => {
            let pin = ca_pin
                .map(|p| p.parse::<crate::pki::Pin>())
                .transpose()
                .context("--ca-pin")?;
            let bundle = read_bundle_file(&file, &ReadOptions::new().with_pin(pin))?;
            if !bundle.pin_checked {
                tracing::warn!(
                    "the bundle's CA was trusted on first use: no --ca-pin was given; check that {} is the pin `dcn bundle export` printed",
                    bundle.ca_pin
                );
            }
            let left = crate::timefmt::rough(bundle.expires_in(std::time::SystemTime::now()));
            println!(
                "{}: valid join bundle for site {} (CA {}{}), expires in {left}",
                file.display(),
                bundle.manifest.site,
                bundle.ca_pin,
                if bundle.pin_checked { ", pinned" } else { "" }
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn standalone_init(args: InitArgs) -> Result<ExitCode> {
    use crate::standalone::PhaseName;
    let config = load_config(args.config.as_deref())?;
    let until = PhaseName::from(args.phase);
    let ignore_preflight = crate::preflight::parse_ignore(&args.ignore_preflight_errors)?;
    let host = crate::host::Host::system(&args.root, args.dry_run);
    let started = std::time::Instant::now();
    let report = crate::standalone::init(
        &config,
        &host,
        &crate::standalone::InitOptions {
            until,
            ignore_preflight,
        },
    )?;
    if args.dry_run {
        print_plan(&report.run);
        return Ok(ExitCode::SUCCESS);
    }
    let changed = report.changed_steps();
    if changed.is_empty() {
        println!("Nothing to do: every step was already done; the checks passed.");
    } else {
        // Name what changed; a first run changes everything, so cap the list.
        const SHOWN: usize = 12;
        let mut list = changed[..changed.len().min(SHOWN)].join(", ");
        if changed.len() > SHOWN {
            list.push_str(&format!(", and {} more", changed.len() - SHOWN));
        }
        println!("Applied {} step(s): {list}", changed.len());
    }
    println!(
        "Control plane {} at {} (roles: {}; {} packages).",
        report.hostname,
        report.address,
        report.roles.join(", "),
        report.packages
    );
    println!("Time per phase:");
    for (phase, took) in &report.run.phases {
        println!("  {phase:<15} {:>7.1}s", took.as_secs_f64());
    }
    println!(
        "  {:<15} {:>7.1}s",
        "total",
        started.elapsed().as_secs_f64()
    );
    println!(
        "CPU time: dcn {:.1}s, the commands it ran {:.1}s",
        cpu_seconds(false),
        cpu_seconds(true)
    );
    if let Some(pin) = &report.ca_pin {
        println!("CA pin: {pin}");
    }
    if until == PhaseName::Finalize {
        println!(
            "Credentials: {} (0600), {}",
            crate::standalone::finalize::CLOUDS_YAML,
            crate::standalone::finalize::OPENRC
        );
        println!(
            "Logs: journalctl -u <unit>, and /var/log/{{keystone,nova,neutron,glance,placement}}/"
        );
        println!("Try: OS_CLOUD=dcn openstack compute service list");
    }
    Ok(ExitCode::SUCCESS)
}

/// Print a dry run's steps and file diffs.
fn print_plan(run: &crate::engine::RunReport) {
    use crate::engine::Outcome;
    for (name, outcome) in &run.steps {
        match outcome {
            Outcome::AlreadyDone | Outcome::Checked => println!("  ok       {name}"),
            Outcome::Applied => println!("  applied  {name}"),
            Outcome::WouldApply(files) => {
                println!("  change   {name}");
                for f in files {
                    println!("             {f}");
                }
            }
        }
    }
    for change in &run.planned {
        println!("\n--- {} ({:?})", change.path, change.change);
        print!("{}", change.diff);
    }
    println!("\nDry run: nothing was changed.");
}

fn lab(cmd: LabCommand) -> Result<ExitCode> {
    match cmd {
        LabCommand::Up(args) => {
            let dcn_binary = std::env::current_exe().context("finding the running dcn binary")?;
            let report = crate::lab::up(&crate::lab::UpOptions {
                dir: args.dir.dir.clone(),
                cache: args.cache,
                edges: args.edges,
                spare: args.spare,
                edge_layer: !args.no_edge_layer,
                dcn_binary,
                config: args.config,
                bare_metal: args.bare_metal,
                bare_metal_failures: args.bare_metal_failures,
                edge_iso: args.edge_iso,
            })?;
            println!("The lab is up ({:.0}s). Phases:", report.total_seconds);
            for p in &report.phases {
                println!("  {:<40} {:>7.1}s", p.phase, p.seconds);
            }
            println!(
                "Timings are in {}.",
                args.dir.dir.join("report.json").display()
            );
            if let Some(inventory) = &report.bare_metal_inventory {
                println!(
                    "Bare-metal site {}: inventory {} (in cp: {}). Deploy it with:\n  dcn lab exec cp -- dcn site deploy {}",
                    crate::lab::bare_metal::SITE,
                    inventory.display(),
                    crate::lab::bare_metal::CP_INVENTORY,
                    crate::lab::bare_metal::CP_INVENTORY
                );
            }
            println!("Try: dcn lab exec cp -- openstack server list");
            Ok(ExitCode::SUCCESS)
        }
        LabCommand::Down(dir) => {
            crate::lab::down(&dir.dir)?;
            println!("The lab in {} is down.", dir.dir.display());
            Ok(ExitCode::SUCCESS)
        }
        LabCommand::Status { dir, output } => {
            let status = crate::lab::status(&dir.dir)?;
            match output {
                OutputFormat::Json => println!("{}", serde_json::to_string_pretty(&status)?),
                OutputFormat::Text => print_lab_status(&status),
            }
            Ok(ExitCode::SUCCESS)
        }
        LabCommand::Exec { dir, host, command } => {
            let code = crate::lab::exec(&dir.dir, &host, &command)?;
            Ok(ExitCode::from(u8::try_from(code).unwrap_or(1)))
        }
        LabCommand::Restart { dir, host } => {
            let secs = crate::lab::restart(&dir.dir, &host)?;
            println!("{host}: restarted, systemd running after {secs:.1}s");
            Ok(ExitCode::SUCCESS)
        }
        LabCommand::Link { dir, host, state } => {
            crate::lab::link(&dir.dir, &host, state == LinkState::Up)?;
            println!(
                "{host}: link {}",
                if state == LinkState::Up { "up" } else { "down" }
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn print_lab_status(status: &crate::lab::LabStatus) {
    println!(
        "{:<8} {:<11} {:<8} {:<13} {:<8} LINK",
        "HOST", "ROLE", "SITE", "ADDRESS", "STATE"
    );
    for h in &status.hosts {
        println!(
            "{:<8} {:<11} {:<8} {:<13} {:<8} {}",
            h.name,
            h.role,
            h.site.as_deref().unwrap_or("-"),
            h.address,
            if h.running { "running" } else { "stopped" },
            if h.link_up { "up" } else { "down" }
        );
    }
    if status.vms.is_empty() {
        return;
    }
    println!(
        "\n{:<11} {:<8} {:<13} {:<18} {:<9} SERIAL LOG",
        "VM", "SITE", "ADDRESS", "MAC", "POWER"
    );
    for v in &status.vms {
        println!(
            "{:<11} {:<8} {:<13} {:<18} {:<9} {}",
            v.vm.name,
            v.vm.site,
            v.vm.address,
            v.vm.mac,
            v.power,
            v.vm.serial_log.display()
        );
    }
}

fn reset(purge: bool, yes: bool) -> Result<ExitCode> {
    use std::io::{BufRead, IsTerminal, Write};
    if !yes {
        if !std::io::stdin().is_terminal() {
            anyhow::bail!(
                "refusing to reset without confirmation: there is no terminal to ask on; pass --yes"
            );
        }
        eprint!(
            "This removes the OpenStack services dcn set up here: guests, databases, configuration, secrets and the CA{}.\nType 'yes' to go on: ",
            if purge { ", and the packages" } else { "" }
        );
        std::io::stderr().flush()?;
        let mut answer = String::new();
        std::io::stdin().lock().read_line(&mut answer)?;
        if answer.trim() != "yes" {
            println!("Nothing was changed.");
            return Ok(ExitCode::FAILURE);
        }
    }
    let host = crate::host::Host::system("/", false);
    let report = crate::reset::reset(&host, purge)?;
    println!(
        "Reset: {} unit(s) stopped, {} database(s) dropped, {} path(s) removed{}.",
        report.units.len(),
        report.databases.len(),
        report.paths.len(),
        if purge {
            format!(", {} package(s) purged", report.packages)
        } else {
            String::new()
        }
    );
    Ok(ExitCode::SUCCESS)
}

/// User + system CPU seconds of this process, or of the children it waited for.
fn cpu_seconds(children: bool) -> f64 {
    use nix::sys::resource::{UsageWho, getrusage};
    let who = if children {
        UsageWho::RUSAGE_CHILDREN
    } else {
        UsageWho::RUSAGE_SELF
    };
    getrusage(who)
        .map(|u| {
            let t = |tv: nix::sys::time::TimeVal| tv.tv_sec() as f64 + tv.tv_usec() as f64 / 1e6;
            t(u.user_time()) + t(u.system_time())
        })
        .unwrap_or(0.0)
}

fn join(args: JoinArgs) -> Result<ExitCode> {
    let ca_pin = args
        .ca_pin
        .as_deref()
        .map(str::parse::<crate::pki::Pin>)
        .transpose()
        .context("--ca-pin")?;
    let host = crate::host::Host::system("/", false);
    let started = std::time::Instant::now();
    let report = crate::join::join(
        &host,
        &crate::join::JoinOptions {
            bundle: args.bundle,
            ca_pin,
            hostname: args.hostname,
            my_ip: args.my_ip,
            timeout: args.timeout,
            packages: args.packages,
            ignore_preflight: crate::preflight::parse_ignore(&args.ignore_preflight_errors)?,
        },
    )?;
    println!(
        "{} ({}) {} site {}: its nova-compute is up, in availability zone {}, and in placement.",
        report.hostname,
        report.address,
        if report.rejoined {
            "is still a node of"
        } else {
            "joined"
        },
        report.site,
        report.site
    );
    println!("Time per step:");
    for (step, took) in &report.steps {
        println!("  {step:<46} {:>7.1}s", took.as_secs_f64());
    }
    println!(
        "  {:<46} {:>7.1}s",
        "total",
        started.elapsed().as_secs_f64()
    );
    Ok(ExitCode::SUCCESS)
}
