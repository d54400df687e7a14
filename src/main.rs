//! The `dcn` binary: parse the command line, run the library, report errors.

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = dcn::cli::Cli::parse();
    dcn::logging::init(cli.global.verbosity());
    match dcn::app::run(cli) {
        Ok(code) => code,
        Err(err) => {
            // `{:#}` prints the whole context chain on one line:
            // "writing /etc/nova/nova.conf: permission denied".
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}
