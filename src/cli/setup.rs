//! Options shared by the subcommands that need tools: where they come from.

use std::path::PathBuf;

use clap::Args;
use codemode::manifest::Manifest;
use codemode::{FileTools, Registry, ToolHandle};

use super::SetupError;

/// Where tools come from.
#[derive(Debug, Args)]
pub(crate) struct ToolOptions {
    /// Folder the built-in file tools (read_file, list_dir, glob, grep) may touch. Paths in
    /// their arguments are relative to it.
    #[arg(long, default_value = ".", value_name = "DIR")]
    pub(crate) root: PathBuf,
    /// A manifest of command-backed tools (JSON, see the README); may be given more than
    /// once. Its commands run in the manifest's folder.
    #[arg(long = "tools", value_name = "MANIFEST.json")]
    pub(crate) manifests: Vec<PathBuf>,
}

/// A registry with the tools of the options; the handles keep them registered.
pub(crate) struct Tools {
    pub(crate) registry: Registry,
    _handles: Vec<ToolHandle>,
}

impl ToolOptions {
    pub(crate) async fn load(&self) -> Result<Tools, SetupError> {
        let registry = Registry::new();
        let files = FileTools::new(&self.root)
            .map_err(|e| SetupError(format!("--root {}: {e}", self.root.display())))?;
        let mut handles = files
            .register(&registry)
            .map_err(|e| SetupError(e.to_string()))?;
        for path in &self.manifests {
            let manifest = Manifest::load(path).map_err(|e| SetupError(e.to_string()))?;
            handles.extend(
                manifest
                    .register(&registry)
                    .map_err(|e| SetupError(e.to_string()))?,
            );
        }
        Ok(Tools {
            registry,
            _handles: handles,
        })
    }
}
