//! `dcn preflight ROLE`: whether this host can run the control plane or an
//! edge compute, as a report.

use crate::cli::{HostRole, OutputFormat, PreflightArgs};
use anyhow::Result;
use std::process::ExitCode;

pub(super) fn preflight(
    args: PreflightArgs,
    recipes: &crate::recipes::Recipes,
) -> Result<ExitCode> {
    use crate::preflight::{Params, Role};
    let role = match args.role {
        HostRole::Standalone => Role::Standalone,
        HostRole::Edge => Role::Edge,
    };
    let params = match (&args.config, role) {
        (Some(path), _) => Params::from_config(&crate::config::load_standalone(recipes, path)?),
        (None, Role::Standalone) => {
            Params::from_config(&crate::config::StandaloneConfig::default())
        }
        (None, Role::Edge) => Params::default(),
    };
    let ignore = crate::preflight::parse_ignore(&args.ignore_preflight_errors)?;
    let report = crate::preflight::run(
        recipes,
        role,
        &crate::host::Files::new("/", false),
        &params,
        &ignore,
    )?;
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
