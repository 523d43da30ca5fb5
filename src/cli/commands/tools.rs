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
        let tools = self.tools.load(true).await?;
        if self.json {
            let mut schemas = tools.registry.schemas();
            schemas.sort_by(|a, b| a.name.cmp(&b.name));
            crate::cli::out(&format!(
                "{}\n",
                serde_json::to_string_pretty(&schemas).unwrap_or_default()
            ));
        } else {
            let mut sorted = tools.registry.sandbox_tools();
            sorted.sort_by(|a, b| a.name().cmp(b.name()));
            for t in sorted {
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
