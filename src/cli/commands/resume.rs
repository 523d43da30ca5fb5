//! `codemode resume ID --approve N|--deny N`: continue a run that paused for approval
//! (`codemode run --ask` without a terminal), from the file store of paused runs.

use std::process::ExitCode;

use clap::Args;
use codemode::run_code::{RUN_CODE_RESUME, run_code_resume_tool, run_code_tool};
use serde_json::json;

use crate::cli::SetupError;
use crate::cli::limits::RunLimits;
use crate::cli::setup::{PauseOptions, ToolOptions};

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
    #[arg(long, value_name = "TEXT")]
    reason: Option<String>,
    /// The tool options the run had: the program must see the same tools.
    #[command(flatten)]
    tools: ToolOptions,
    #[command(flatten)]
    limits: RunLimits,
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
    /// Bytes of stack for the thread the program runs on.
    pub(crate) fn thread_stack(&self) -> usize {
        self.limits.thread_stack()
    }

    pub(crate) async fn execute(self) -> Result<ExitCode, SetupError> {
        if self.approve.is_empty() && self.deny.is_empty() {
            return Err(SetupError(
                "give a decision for each call the run paused at: --approve N or --deny N".into(),
            ));
        }
        let tools = self.tools.load(false).await?;
        let config = self
            .limits
            .run_code_config()
            .paused_runs(Some(self.paused.store()?));
        let _run = tools
            .registry
            .register(run_code_tool(config.clone()))
            .map_err(|e| SetupError(e.to_string()))?;
        let _resume = tools
            .registry
            .register(run_code_resume_tool(config))
            .map_err(|e| SetupError(e.to_string()))?;
        let reason = self
            .reason
            .clone()
            .unwrap_or_else(|| "denied with codemode resume --deny".to_owned());
        let decisions: Vec<_> = self
            .approve
            .iter()
            .map(|n| json!({"call": n, "approve": true}))
            .chain(
                self.deny
                    .iter()
                    .map(|n| json!({"call": n, "approve": false, "reason": reason})),
            )
            .collect();
        let outcome = tools
            .registry
            .call(
                RUN_CODE_RESUME,
                json!({"id": self.id, "decisions": decisions}),
            )
            .await;
        let value = outcome
            .into_result()
            .map_err(|e| SetupError(e.message().to_owned()))?;
        tools.registry.jobs().shutdown().await;
        Ok(super::run::print_run(&value, self.json, self.quiet))
    }
}
