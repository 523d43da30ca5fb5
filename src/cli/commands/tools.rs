//! `codemode tools`: the tools a program sees, one per line with its description.

use std::process::ExitCode;

use clap::Args;

use crate::cli::SetupError;
use crate::cli::setup::ToolOptions;

#[derive(Debug, Args)]
pub(crate) struct ToolsCommand {
    #[command(flatten)]
    tools: ToolOptions,
    /// Print the model-facing projection (name, description, JSON Schemas) as JSON.
    #[arg(long)]
    json: bool,
}

impl ToolsCommand {
    pub(crate) async fn execute(self) -> Result<ExitCode, SetupError> {
        let tools = self.tools.load().await?;
        if self.json {
            let schemas = tools.registry.schemas();
            crate::cli::out(&format!(
                "{}\n",
                serde_json::to_string_pretty(&schemas).unwrap_or_default()
            ));
        } else {
            for t in tools.registry.sandbox_tools() {
                let alias = codemode::tool_alias(t.name());
                let alias = if alias != t.name() {
                    format!(" (tools.{alias})")
                } else {
                    String::new()
                };
                crate::cli::out(&format!("{}{alias}\t{}\n", t.name(), t.description()));
            }
        }
        Ok(ExitCode::SUCCESS)
    }
}
