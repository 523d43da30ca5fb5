//! `codemode types`: the TypeScript declarations of the tools a program sees,
//! or their Rust types.

use std::process::ExitCode;

use clap::Args;
use codemode::declarations::{Layout, SANDBOX_GLOBALS};

use crate::cli::SetupError;
use crate::cli::setup::ToolOptions;

#[derive(Debug, Args)]
pub(crate) struct TypesCommand {
    #[command(flatten)]
    tools: ToolOptions,
    /// The compact layout the model reads in `run_code`'s description, instead of one
    /// member per line.
    #[arg(long, conflicts_with = "rust")]
    compact: bool,
    /// Also declare the sandbox's other globals (`console`, timers), for a project whose
    /// TypeScript `lib` has no DOM.
    #[arg(long, conflicts_with = "rust")]
    globals: bool,
    /// Rust types (typify) of the tools' arguments and outputs instead: one module per tool
    /// with `Args` and `Output`; the code needs `serde` (with `derive`) and `serde_json`.
    #[arg(long)]
    rust: bool,
}

impl TypesCommand {
    pub(crate) async fn execute(self) -> Result<ExitCode, SetupError> {
        let tools = self.tools.load(true).await?;
        if self.rust {
            // typify panics on some schemas; that is caught and becomes a commented
            // fallback type, so its panic message is not for the user.
            std::panic::set_hook(Box::new(|_| {}));
            let text =
                codemode_codegen::rust_types(&codemode::declarations::tool_decls(&tools.registry));
            let _ = std::panic::take_hook();
            crate::cli::out(&text);
            return Ok(ExitCode::SUCCESS);
        }
        let layout = if self.compact {
            Layout::Compact
        } else {
            Layout::Pretty
        };
        let text = codemode::declarations::declarations(&tools.registry, layout)
            .map_err(|e| SetupError(e.to_string()))?;
        crate::cli::out(&text);
        if self.globals {
            crate::cli::out(SANDBOX_GLOBALS);
        }
        Ok(ExitCode::SUCCESS)
    }
}
