//! `codemode resume ID --approve N|--deny N`: continue a run that paused for approval
//! (`codemode run --ask` without a terminal), from the folder of paused runs. The run keeps
//! the folder and command line of the `codemode run` that made it: the resume rebuilds the
//! same tools, policy, limits and output options from them.

use std::process::ExitCode;

use clap::Args;
use codemode::run_code::FilePausedRuns;
use serde_json::{Value, json};

use super::run::{RunCommand, Work};
use crate::cli::SetupError;
use crate::cli::setup::PauseOptions;

#[derive(Debug, Args)]
pub(crate) struct ResumeCommand {
    /// The paused run's id (printed when it paused; `paused.id` of `--json`).
    id: String,
    /// Run call N, which the run paused at. May be given more than once.
    #[arg(long, value_name = "N")]
    approve: Vec<u64>,
    /// Deny call N: the program receives a ToolCallError that says so. May be given more
    /// than once.
    #[arg(long, value_name = "N")]
    deny: Vec<u64>,
    /// What the denied calls' errors say.
    #[arg(long, value_name = "TEXT", requires = "deny")]
    reason: Option<String>,
    #[command(flatten)]
    paused: PauseOptions,
    /// Print the canonical JSON value of the run instead of the model-facing text.
    #[arg(long)]
    json: bool,
    /// Print only the result (or the error), no console lines.
    #[arg(long, short = 'q')]
    quiet: bool,
}

impl ResumeCommand {
    /// Bytes of stack for the thread the program runs on: the paused run's (its command
    /// line may give other limits), else the default.
    pub(crate) fn thread_stack(&self) -> usize {
        match self.paused_run() {
            Ok((_, _, run)) => run.thread_stack(),
            Err(_) => RunCommand::parse(&["-".to_owned()]).map_or(8 << 20, |r| r.thread_stack()),
        }
    }

    /// The paused run's folder and its `codemode run` command line (words, and parsed).
    fn paused_run(&self) -> Result<(std::path::PathBuf, Vec<String>, RunCommand), SetupError> {
        let dir = self
            .paused
            .paused_dir
            .clone()
            .unwrap_or_else(FilePausedRuns::default_dir);
        let store = FilePausedRuns::new(&dir)
            .map_err(|e| SetupError(format!("--paused-dir {}: {e}", dir.display())))?;
        let Some(run) = store.peek(&self.id).map_err(SetupError)? else {
            return Err(SetupError(format!(
                "there is no paused run {:?} in {}: it was resumed already, it expired, or it never existed",
                self.id.chars().take(80).collect::<String>(),
                dir.display()
            )));
        };
        let cwd = run.host.get("cwd").and_then(Value::as_str);
        let args: Option<Vec<String>> = run.host.get("args").and_then(Value::as_array).map(|a| {
            a.iter()
                .filter_map(|w| w.as_str().map(str::to_owned))
                .collect()
        });
        let (Some(cwd), Some(args)) = (cwd, args) else {
            return Err(SetupError(format!(
                "the paused run {} was not made by `codemode run`: resume it with run_code_resume where it was made",
                self.id
            )));
        };
        let run = RunCommand::parse(&args)?;
        Ok((std::path::PathBuf::from(cwd), args, run))
    }

    pub(crate) async fn execute(self) -> Result<ExitCode, SetupError> {
        if self.approve.is_empty() && self.deny.is_empty() {
            return Err(SetupError(
                "give a decision for each call the run paused at: --approve N or --deny N".into(),
            ));
        }
        let (cwd, command_line, mut run) = self.paused_run()?;
        // The run's paths (--root, --tools, --spill-dir, …) are relative to its folder.
        std::env::set_current_dir(&cwd)
            .map_err(|e| SetupError(format!("the paused run's folder {}: {e}", cwd.display())))?;
        run.json = self.json;
        run.quiet = self.quiet;
        run.paused = self.paused;
        let denial = |n: &u64| match &self.reason {
            Some(reason) => json!({"call": n, "approve": false, "reason": reason}),
            None => json!({"call": n, "approve": false}),
        };
        let decisions: Vec<Value> = self
            .approve
            .iter()
            .map(|n| json!({"call": n, "approve": true}))
            .chain(self.deny.iter().map(denial))
            .collect();
        run.perform(Work::Resume {
            id: self.id,
            decisions,
            command_line,
        })
        .await
    }
}
