//! `codemode tools`: the tools a program sees, one per line with its description.

use std::process::ExitCode;

use clap::Args;

use crate::cli::SetupError;
use crate::cli::setup::ToolOptions;

#[derive(Debug, Args)]
pub(crate) struct ToolsCommand {
    #[command(flatten)]
    tools: ToolOptions,
    /// Print the model-facing projection (name, description, JSON Schemas) as JSON, with
    /// `warnings` on a tool whose imported schemas kept keywords for display only.
    #[arg(long)]
    json: bool,
}

impl ToolsCommand {
    pub(crate) async fn execute(self) -> Result<ExitCode, SetupError> {
        let tools = self.tools.load(true).await?;
        if self.json {
            let mut schemas = tools.registry.schemas();
            schemas.sort_by(|a, b| a.name.cmp(&b.name));
            // Each tool whose imported schemas kept keywords for display only lists them
            // under `warnings` ("path: message").
            let entries: Vec<serde_json::Value> = schemas
                .iter()
                .map(|s| {
                    let mut entry = serde_json::to_value(s).unwrap_or_default();
                    let warnings: Vec<String> = tools
                        .import_warnings
                        .iter()
                        .filter(|(tool, _)| *tool == s.name)
                        .map(|(_, w)| w.to_string())
                        .collect();
                    if !warnings.is_empty()
                        && let Some(map) = entry.as_object_mut()
                    {
                        map.insert("warnings".into(), warnings.into());
                    }
                    entry
                })
                .collect();
            crate::cli::out(&format!(
                "{}\n",
                serde_json::to_string_pretty(&entries).unwrap_or_default()
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
