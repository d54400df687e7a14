//! [`RecordingRunner`], the test double of [`Runner`]: it records every
//! command and answers from a closure instead of running anything.

use super::{Cmd, CmdOutput, Runner, check_output};
use anyhow::Result;
use std::sync::Mutex;

/// A test double: records every command and answers from a closure.
pub struct RecordingRunner {
    calls: Mutex<Vec<Cmd>>,
    #[allow(clippy::type_complexity)]
    respond: Box<dyn Fn(&Cmd) -> CmdOutput + Send + Sync>,
}

impl RecordingRunner {
    /// Every command succeeds with empty output.
    pub fn new() -> RecordingRunner {
        Self::answering(|_| CmdOutput::ok(""))
    }

    /// Commands are answered by `respond`.
    pub fn answering(respond: impl Fn(&Cmd) -> CmdOutput + Send + Sync + 'static) -> Self {
        RecordingRunner {
            calls: Mutex::new(Vec::new()),
            respond: Box::new(respond),
        }
    }

    /// The commands run so far.
    pub fn calls(&self) -> Vec<Cmd> {
        self.calls.lock().unwrap().clone()
    }

    /// Their command lines.
    pub fn command_lines(&self) -> Vec<String> {
        self.calls().iter().map(Cmd::command_line).collect()
    }
}

impl Default for RecordingRunner {
    fn default() -> Self {
        Self::new()
    }
}

impl Runner for RecordingRunner {
    fn run(&self, cmd: &Cmd) -> Result<CmdOutput> {
        self.calls.lock().unwrap().push(cmd.clone());
        check_output(cmd, (self.respond)(cmd))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recording_runner_records_and_answers() {
        let r = RecordingRunner::answering(|c| {
            if c.program == "false" {
                CmdOutput::failed(1, "nope")
            } else {
                CmdOutput::ok("yes")
            }
        });
        assert_eq!(r.run(&Cmd::new("a", "true")).unwrap().stdout, "yes");
        assert!(r.run(&Cmd::new("b", "false")).is_err());
        assert_eq!(r.command_lines(), vec!["true", "false"]);
    }
}
