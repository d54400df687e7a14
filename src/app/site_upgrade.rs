//! `dcn site upgrade` and `dcn site cache-image`: the plan, then each
//! node's turn as it happens (stderr), then how every node ended
//! (stdout), exiting non-zero when a node failed.

use crate::centre::site_upgrade::drive::{Event, Limits, Standing};
use crate::centre::site_upgrade::{self, Options, Plan};
use crate::cli::{OutputFormat, SiteCacheImageArgs, SiteUpgradeArgs};
use crate::recipes::Recipes;
use crate::terminal_text::{Column, Table};
use anyhow::Result;
use std::process::ExitCode;

pub(super) fn upgrade(args: SiteUpgradeArgs, recipes: &Recipes) -> Result<ExitCode> {
    let host = crate::host::Host::system("/", false);
    let opts = Options {
        sites: args.sites,
        canary: args.canary,
        batch: args.batch as usize,
        max_failures: args.max_failures as usize,
        limits: Limits {
            node: args.node_timeout,
            verify: args.verify_timeout,
        },
    };
    let plan = site_upgrade::plan(recipes, &host, &opts)?;
    if args.plan {
        match args.output {
            OutputFormat::Json => println!("{}", serde_json::to_string_pretty(&plan)?),
            OutputFormat::Text => {
                print_plan(&plan);
                println!("\nPlan only: nothing was ordered. Run it without --plan to upgrade.");
            }
        }
        return Ok(ExitCode::SUCCESS);
    }
    if args.output == OutputFormat::Text {
        print_plan(&plan);
        println!();
    }
    let started = std::time::Instant::now();
    let summary = site_upgrade::run(recipes, &host, &opts, &mut |e| {
        let secs = started.elapsed().as_secs();
        match e {
            Event::Ordered { host, attempt } => {
                eprintln!("[{secs:>5}s] {host}: its turn (attempt {attempt})")
            }
            Event::Phase {
                host,
                phase,
                detail,
            } => eprintln!(
                "[{secs:>5}s] {host}: {phase}{}",
                detail
                    .as_deref()
                    .map(|d| format!(" ({d})"))
                    .unwrap_or_default()
            ),
            Event::Upgraded { host } => eprintln!("[{secs:>5}s] {host}: upgraded"),
            Event::Failed { host, reason } => eprintln!("[{secs:>5}s] {host}: FAILED: {reason}"),
        }
    })?;
    let status: Vec<_> = summary
        .campaign
        .sites
        .iter()
        .map(|s| {
            crate::centre::sites::phases::site_status(&host.files, s, std::time::SystemTime::now())
        })
        .collect::<Result<_>>()?;
    match args.output {
        OutputFormat::Json => println!("{}", serde_json::to_string_pretty(&summary.campaign)?),
        OutputFormat::Text => {
            for s in &status {
                print!("{s}");
            }
        }
    }
    Ok(match summary.standing {
        Standing::Done => {
            eprintln!(
                "Every node of {} runs release {} (in {}s).",
                summary.campaign.sites.join(", "),
                summary.campaign.release.id,
                started.elapsed().as_secs()
            );
            ExitCode::SUCCESS
        }
        _ => {
            eprintln!(
                "Stopped: {} node(s) failed (the limit is {}). Fix the cause and run the same command again: upgraded nodes are left alone, failed ones get their turn again.",
                summary.campaign.failures(),
                summary.campaign.max_failures
            );
            ExitCode::FAILURE
        }
    })
}

fn print_plan(plan: &Plan) {
    let r = &plan.release;
    println!(
        "Edge release {} (dcn {}, {} packages{}){}",
        r.release.id,
        r.release.dcn_version,
        r.packages,
        match r.not_in_source {
            0 => String::new(),
            n => format!(
                "; {n} of the base system's packages are not in the source at the control plane's versions, and edges keep theirs"
            ),
        },
        if plan.built { ", built now" } else { "" }
    );
    match &plan.previous {
        None => println!("No earlier edge release to compare with."),
        Some(p) if plan.package_changes.is_empty() => {
            println!("Packages: the same as the previous release {p}.")
        }
        Some(p) => {
            println!(
                "Packages changed since the previous release {p} ({}):",
                plan.package_changes.len()
            );
            for c in &plan.package_changes {
                println!("  {c}");
            }
        }
    }
    if plan.resumes {
        println!("An earlier run of this upgrade is resumed.");
    }
    let mut table = Table::new(&[
        Column::new("TURN", 8).at_least(6),
        Column::new("NODE", 64).at_least(12),
        Column::new("SITE", 32).at_least(6),
        Column::new("DCN", 20).at_least(8),
        Column::new("STATE", 80),
    ])
    .gap(1);
    for n in &plan.nodes {
        // Waves count from the canary's (0) when there is one.
        let turn = match (&plan.canary, n.wave) {
            (Some(_), 0) => "canary".to_string(),
            (Some(_), w) => w.to_string(),
            (None, w) => (w + 1).to_string(),
        };
        let state = match (&n.current, &n.phase) {
            (true, _) => "runs the release".to_string(),
            (false, Some(p)) => p.clone(),
            (false, None) => "to upgrade".to_string(),
        };
        table.row([
            turn.as_str(),
            &n.hostname,
            &n.site,
            n.dcn_version.as_deref().unwrap_or("(never asked)"),
            &state,
        ]);
    }
    print!("{}", table.render());
}

pub(super) fn cache_image(args: SiteCacheImageArgs) -> Result<ExitCode> {
    let host = crate::host::Host::system("/", false);
    let started = std::time::Instant::now();
    let result = crate::centre::site_images::cache(
        &host,
        args.site.as_str(),
        &args.images,
        args.timeout,
        &mut |line| eprintln!("[{:>5}s] {line}", started.elapsed().as_secs()),
    )?;
    print!("{}", result.table());
    Ok(match result.complete() {
        true => ExitCode::SUCCESS,
        false => ExitCode::FAILURE,
    })
}
