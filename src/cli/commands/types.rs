//! `codemode types`: the TypeScript declarations of the tools a program sees (DESIGN §6).

use std::process::ExitCode;

use clap::Args;

use crate::cli::SetupError;
use crate::cli::setup::ToolOptions;

#[derive(Debug, Args)]
pub(crate) struct TypesCommand {
    #[command(flatten)]
    tools: ToolOptions,
}

impl TypesCommand {
    pub(crate) async fn execute(self) -> Result<ExitCode, SetupError> {
        let tools = self.tools.load()?;
        let text = codemode::declarations(&tools.registry, codemode::Layout::Pretty)
            .map_err(|e| SetupError(e.to_string()))?;
        print!("{text}");
        Ok(ExitCode::SUCCESS)
    }
}
