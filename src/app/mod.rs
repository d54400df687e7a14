//! One library call per subcommand: [`run`] maps the parsed command line
//! onto the library and prints results on stdout.

mod backup;
mod bmc;
mod bundle;
mod certs;
mod image;
mod join;
mod lab;
mod preflight;
mod reset;
mod site_upgrade;
mod sites;
mod standalone;
mod upgrade;

use crate::cli::*;
use anyhow::{Context, Result};
use std::process::ExitCode;

/// Run a parsed command line.
/// The catalogue ([`crate::recipes::Recipes`]) is loaded here, once, and
/// passed to what needs it; recipes that do not load are an error naming
/// the file and line.
pub fn run(cli: Cli) -> Result<ExitCode> {
    let recipes =
        &crate::recipes::Recipes::embedded().context("loading the recipes built into dcn")?;
    match cli.command {
        Command::Config(ConfigCommand::Defaults) => {
            print!("{}", crate::config::STANDALONE_DEFAULTS);
            Ok(ExitCode::SUCCESS)
        }
        Command::Config(ConfigCommand::Validate { file }) => {
            println!("{}", crate::config::validate_file(recipes, &file)?);
            Ok(ExitCode::SUCCESS)
        }
        Command::Preflight(args) => preflight::preflight(args, recipes),
        Command::Bundle(cmd) => bundle::bundle(cmd, recipes),
        Command::Standalone(StandaloneCommand::Init(args)) => {
            standalone::standalone_init(args, recipes)
        }
        Command::Upgrade(args) => upgrade::upgrade(args, recipes),
        Command::Lab(cmd) => lab::lab(cmd, recipes),
        Command::Join(args) => join::join(args, recipes),
        Command::Serve => {
            crate::centre::serve::run(crate::host::Host::system("/", false), recipes.clone())?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Site(cmd) => sites::site(cmd, recipes),
        Command::Node(cmd) => sites::node(cmd, recipes),
        Command::Cert(cmd) => certs::cert(cmd, recipes),
        Command::Ca(cmd) => certs::ca(cmd, recipes),
        Command::Backup(args) => backup::backup(args, recipes),
        Command::Restore(args) => backup::restore(args, recipes),
        Command::Bmc(cmd) => bmc::bmc(cmd),
        Command::Image(cmd) => image::image(cmd, recipes),
        Command::Install(args) => image::install(args, recipes),
        Command::Status { output } => {
            let host = crate::host::Host::system("/", false);
            let status = crate::status::status(&host, recipes)?;
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
        Command::Reset { purge, yes } => reset::reset(purge, yes, recipes),
        Command::Completions(args) => {
            clap_complete::generate(args.shell, &mut command(), "dcn", &mut std::io::stdout());
            Ok(ExitCode::SUCCESS)
        }
        Command::Man(args) => {
            // The operator's folder, as given (it may be relative), is
            // the root the pages are written under.
            let out = crate::host::Files::new(&args.out_dir, false);
            for (name, text) in man::pages() {
                out.write(format!("/{name}"), &text, &crate::host::FileSpec::public())
                    .with_context(|| format!("writing {}", args.out_dir.join(&name).display()))?;
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}
