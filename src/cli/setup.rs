//! Options shared by the subcommands that need tools: where they come from.

use std::path::PathBuf;

use clap::Args;
use codemode::manifest::Manifest;
use codemode::mcp::{Connection, ServerConfig, connect_all, load_config};
use codemode::schema::ImportWarning;
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
    /// An MCP server over stdio whose tools become `NAME.tool`; `COMMAND` is split into
    /// words as a shell would, without a shell. May be given more than once.
    #[arg(long = "mcp", value_name = "NAME=COMMAND", value_parser = parse_mcp)]
    pub(crate) mcp: Vec<ServerConfig>,
    /// MCP servers in the `{"mcpServers": {…}}` form MCP clients use (`command`, `args`,
    /// `env`, `cwd`, or `url` and `headers`); may be given more than once.
    #[arg(long = "mcp-config", value_name = "FILE")]
    pub(crate) mcp_configs: Vec<PathBuf>,
    /// Allow what programs may not do by default: `write` (write_file, edit_file under
    /// --root), `shell` (bash), `net=HOST[,HOST…]` (web_fetch to these hosts). May be given
    /// more than once. A call of a tool not allowed fails with the flag that would allow it.
    #[arg(long = "allow", value_name = "WHAT", value_parser = super::policy::parse_allow)]
    pub(crate) allow: Vec<super::policy::Allow>,
    /// Refuse every tool not marked read-only (its readOnlyHint), whatever --allow says:
    /// built-in readers, manifest tools that declare it, MCP tools whose server says so.
    #[arg(long)]
    pub(crate) read_only: bool,
    /// Ask before each write or shell call that --allow does not allow, instead of
    /// refusing it: on a terminal, y/n/always there and then; without one, the run pauses
    /// at the call (exit status 3, `--json` shows its id) and `codemode resume ID
    /// --approve N` (or `--deny N`) continues it later, with the run's own folder and options.
    #[arg(long)]
    pub(crate) ask: bool,
}

fn parse_mcp(text: &str) -> Result<ServerConfig, String> {
    ServerConfig::parse_flag(text).map_err(|e| e.message)
}

/// A registry with the tools of the options; the handles and connections keep them
/// registered. Dropped, it hands its MCP servers to [`close_servers`].
pub(crate) struct Tools {
    pub(crate) registry: Registry,
    /// What the import of manifests' and servers' JSON Schemas kept for display only, as
    /// `(tool name, warning)`; already said on stderr.
    pub(crate) import_warnings: Vec<(String, ImportWarning)>,
    _policy: Vec<codemode::hooks::HookHandle>,
    _handles: Vec<ToolHandle>,
    _servers: Vec<Connection>,
}

/// The background-job runtimes of the registries made, for [`shutdown_jobs`].
static JOBS: std::sync::Mutex<Vec<codemode::jobs::Jobs>> = std::sync::Mutex::new(Vec::new());

/// Ends every background job of this process (each one's cleanup, its processes killed),
/// waiting at most `wait`: what a command stopped by a signal does before it exits.
pub(crate) async fn shutdown_jobs(wait: std::time::Duration) {
    let all = std::mem::take(
        &mut *JOBS
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
    );
    let _ = tokio::time::timeout(
        wait,
        futures::future::join_all(all.iter().map(codemode::jobs::Jobs::shutdown)),
    )
    .await;
}

/// The MCP servers of commands that are done, until [`close_servers`] ends them.
static CLOSING: std::sync::Mutex<Vec<Connection>> = std::sync::Mutex::new(Vec::new());

impl Drop for Tools {
    fn drop(&mut self) {
        let servers = std::mem::take(&mut self._servers);
        CLOSING
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .extend(servers);
    }
}

/// Ends the MCP servers of the commands that are done: `gracefully` as the MCP
/// specification's stdio shutdown asks ([`Connection::close`], all at once), or by killing
/// their process groups at once (a command stopped by a signal).
pub(crate) async fn close_servers(gracefully: bool) {
    let servers = std::mem::take(
        &mut *CLOSING
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
    );
    if gracefully {
        futures::future::join_all(servers.into_iter().map(Connection::close)).await;
    }
}

impl ToolOptions {
    /// The registry with every tool of the options. `servers_must_start`: an MCP server
    /// that fails is an error (exit 2) for the commands whose output describes the tools
    /// (`types`, `tools`, `check`: declarations silently missing a server's tools would
    /// mislead); `run` and `mcp` say it on stderr and go on with the others.
    pub(crate) async fn load(&self, servers_must_start: bool) -> Result<Tools, SetupError> {
        let registry = Registry::new();
        let files = FileTools::new(&self.root)
            .map_err(|e| SetupError(format!("--root {}: {e}", self.root.display())))?;
        JOBS.lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(registry.jobs().clone());
        let mut permissions = super::policy::Permissions::of(&self.allow);
        permissions.read_only = self.read_only;
        permissions.ask = self.ask;
        // Every tool is there (and declared); the policy decides what a run may call.
        let mut tools = files.tools();
        tools.extend(files.write_tools());
        tools.push(files.shell_tool());
        tools.push(codemode::web_fetch_tool(permissions.hosts()));
        let mut handles = tools
            .into_iter()
            .map(|t| registry.register(t))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| SetupError(e.to_string()))?;
        let policy = permissions.install(&registry);
        let mut import_warnings = Vec::new();
        for path in &self.manifests {
            let manifest = Manifest::load(path).map_err(|e| SetupError(e.to_string()))?;
            for (tool, warning) in manifest.warnings() {
                eprintln!("codemode: {}: tool {tool:?}: {warning}", manifest.file);
                import_warnings.push((tool, warning));
            }
            handles.extend(
                manifest
                    .register(&registry)
                    .map_err(|e| SetupError(e.to_string()))?,
            );
        }
        let mut configs = self.mcp.clone();
        for path in &self.mcp_configs {
            configs.extend(load_config(path).map_err(|e| SetupError(e.to_string()))?);
        }
        let mut names = std::collections::HashSet::new();
        if let Some(c) = configs.iter().find(|c| !names.insert(c.name.as_str())) {
            return Err(SetupError(format!(
                "two MCP servers are named {:?} (--mcp and --mcp-config together); give each its own name",
                c.name
            )));
        }
        // A server that fails is said on stderr; the others, and the run, go on.
        let mut servers = Vec::with_capacity(configs.len());
        let mut failed = Vec::new();
        for connected in connect_all(configs, &registry).await {
            match connected {
                Ok(server) => {
                    for warning in server.warnings() {
                        eprintln!("codemode: MCP server {:?}: {warning}", server.name());
                    }
                    for (tool, warning) in server.import_warnings() {
                        eprintln!(
                            "codemode: MCP server {:?}: tool {tool:?}: {warning}",
                            server.name()
                        );
                        import_warnings.push((tool, warning));
                    }
                    servers.push(server);
                }
                Err(e) if servers_must_start => failed.push(e.to_string()),
                Err(e) => eprintln!("codemode: {e}"),
            }
        }
        if !failed.is_empty() {
            return Err(SetupError(failed.join("\ncodemode: ")));
        }
        Ok(Tools {
            registry,
            import_warnings,
            _policy: policy,
            _handles: handles,
            _servers: servers,
        })
    }
}

impl ToolOptions {
    /// What a run depends on beyond its tools' schemas: the root (resolved), the
    /// permissions and the policy flags. A paused run resumes only under the same.
    pub(crate) fn settings(&self) -> serde_json::Value {
        let root = self
            .root
            .canonicalize()
            .unwrap_or_else(|_| self.root.clone());
        serde_json::json!({
            "root": root,
            "allow": self.allow.iter().map(|a| format!("{a:?}")).collect::<Vec<_>>(),
            "read_only": self.read_only,
            "ask": self.ask,
        })
    }
}

/// Where paused runs are kept (`run --ask` without a terminal, `resume`, `mcp`).
#[derive(Debug, clap::Args)]
pub(crate) struct PauseOptions {
    /// Folder for paused runs. Default: `$XDG_STATE_HOME/codemode/paused` (else
    /// `~/.local/state/codemode/paused`).
    #[arg(long = "paused-dir", value_name = "DIR")]
    pub(crate) paused_dir: Option<PathBuf>,
}

impl PauseOptions {
    /// The file store of paused runs.
    pub(crate) fn store(
        &self,
    ) -> Result<std::sync::Arc<dyn codemode::run_code::PausedRuns>, SetupError> {
        let dir = self
            .paused_dir
            .clone()
            .unwrap_or_else(codemode::run_code::FilePausedRuns::default_dir);
        codemode::run_code::FilePausedRuns::new(&dir)
            .map(|s| std::sync::Arc::new(s) as std::sync::Arc<dyn codemode::run_code::PausedRuns>)
            .map_err(|e| SetupError(format!("--paused-dir {}: {e}", dir.display())))
    }
}
