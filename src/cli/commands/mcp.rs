//! `codemode mcp`: serve `run_code` over the tools of the options to an MCP client, over
//! stdio (the default) or streamable HTTP (`--http`).

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use codemode::mcp::server::{
    DEFAULT_MAX_CALLS_PER_SESSION, DEFAULT_YIELD_AFTER, HttpOptions, McpServer, McpServerConfig,
};
use codemode::run_code::{EnginePool, RunCodeConfig, SpillConfig};

use crate::cli::SetupError;
use crate::cli::limits::RunLimits;
use crate::cli::setup::{PauseOptions, ToolOptions};

/// How long the server waits for its background jobs to end when it stops.
const JOBS_SHUTDOWN: Duration = Duration::from_secs(10);

#[derive(Debug, Args)]
pub(crate) struct McpCommand {
    #[command(flatten)]
    tools: ToolOptions,
    #[command(flatten)]
    limits: RunLimits,
    #[command(flatten)]
    paused: PauseOptions,
    /// Offer every tool directly as well, besides run_code and read_spill.
    #[arg(long)]
    expose_tools: bool,
    /// Serve over streamable HTTP at http://ADDR/mcp instead of stdio. ADDR is a port
    /// (bound to 127.0.0.1; `0` picks a free one) or an IP address with a port
    /// (`127.0.0.1:8931`, `[::1]:8931`; `0.0.0.0:8931` listens on every interface). The
    /// URL is printed on stderr.
    #[arg(long, value_name = "ADDR", value_parser = parse_http_addr)]
    http: Option<SocketAddr>,
    /// With --http: a Host header value to accept besides the loopback ones (`name` or
    /// `name:port`), for clients that reach the server by another name.
    #[arg(long = "allow-host", value_name = "HOST", requires = "http")]
    allow_hosts: Vec<String>,
    /// With --http: a browser Origin to accept besides the server's own loopback ones
    /// (`https://app.example.com:443`, `:*` for any port).
    #[arg(long = "allow-origin", value_name = "ORIGIN", requires = "http")]
    allow_origins: Vec<String>,
    /// Most calls of one session that run at once; later ones wait for a slot.
    #[arg(
        long = "max-calls-per-session",
        value_name = "N",
        default_value_t = DEFAULT_MAX_CALLS_PER_SESSION as u64,
        value_parser = clap::value_parser!(u64).range(1..=4096)
    )]
    max_calls_per_session: u64,
    /// Engines kept built ahead (runtime, context and prelude), each used for one run, so
    /// a `run_code` call skips starting one; 0 starts an engine per call. Each idle engine
    /// holds about 270 KiB.
    #[arg(
        long = "warm-engines",
        value_name = "N",
        default_value_t = 2,
        value_parser = clap::value_parser!(u64).range(0..=64)
    )]
    warm_engines: u64,
    /// A run_code call still running after TIME (`10s`, `500ms`, or milliseconds) answers
    /// `status: "running"` with a job id, and the program goes on as a background job of
    /// the session (read it with job_output, stop it with job_kill); 0 waits for every run
    /// to end.
    #[arg(long = "yield-after", value_name = "TIME", default_value_t = DEFAULT_YIELD_AFTER.as_millis() as u64, value_parser = crate::cli::limits::parse_duration_ms)]
    yield_after: u64,
    /// Most tokens (o200k_base) the tools' TypeScript declarations may take in run_code's
    /// description; past it the description lists the tools by name with a one-line summary,
    /// and programs find them with `tools.$search` and read them with `tools.$describe`.
    /// 0 always lists; a large number always declares.
    #[arg(long = "tool-budget", value_name = "TOKENS", default_value_t = codemode::discovery::DEFAULT_TOOL_BUDGET)]
    tool_budget: usize,
}

/// Parses `8931` (on 127.0.0.1), `localhost:8931`, or an IP address with a port.
fn parse_http_addr(text: &str) -> Result<SocketAddr, String> {
    let text = text.trim();
    if let Ok(port) = text.parse::<u16>() {
        return Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port));
    }
    if let Some(port) = text.strip_prefix("localhost:")
        && let Ok(port) = port.parse::<u16>()
    {
        return Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port));
    }
    text.parse::<SocketAddr>().map_err(|_| {
        format!(
            "{text:?} is not an address: expected a port (8931) or an IP address with a port (127.0.0.1:8931)"
        )
    })
}

impl McpCommand {
    pub(crate) async fn execute(self) -> Result<ExitCode, SetupError> {
        let tools = self.tools.load(false).await?;
        let mut run_code = self
            .limits
            .run_code_config()
            .spill(Some(SpillConfig::default()))
            .yield_after((self.yield_after > 0).then(|| Duration::from_millis(self.yield_after)));
        // A run that may go on as a job gets the library's background timeout (10 minutes),
        // unless --timeout is given: then it bounds every run.
        let background = self
            .limits
            .given_timeout()
            .unwrap_or(RunCodeConfig::default().background_timeout);
        run_code = run_code
            .background_timeout(background)
            .tool_budget(self.tool_budget)
            // A run paused for approval survives a restart of the server, and resumes only
            // under the same root and policy.
            .paused_runs(Some(self.paused.store()?))
            .paused_host(self.tools.settings());
        if self.warm_engines > 0 {
            run_code = run_code.engine_pool(EnginePool::new(self.warm_engines as usize));
        }
        let config = McpServerConfig::default()
            .run_code(run_code)
            .expose_tools(self.expose_tools)
            .max_calls_per_session(self.max_calls_per_session as usize);
        let server = McpServer::new(tools.registry.clone(), config)
            .map_err(|e| SetupError(e.to_string()))?;
        let served = match self.http {
            None => tokio::select! {
                served = server.serve_stdio() => served,
                () = crate::cli::shutdown_signal() => Ok(()),
            },
            Some(addr) => {
                let mut options = HttpOptions::default();
                options.allowed_hosts = self.allow_hosts;
                options.allowed_origins = self.allow_origins;
                let http = server
                    .bind_http(addr, options)
                    .await
                    .map_err(|e| SetupError(e.to_string()))?;
                eprintln!("codemode mcp: listening on {}", http.url());
                http.serve_until(crate::cli::shutdown_signal()).await
            }
        };
        // Background jobs end with the server: each one's cleanup, then its thread.
        let jobs = tools.registry.jobs().clone();
        if tokio::time::timeout(JOBS_SHUTDOWN, jobs.shutdown())
            .await
            .is_err()
        {
            eprintln!(
                "codemode mcp: background jobs did not end within {} s of the shutdown",
                JOBS_SHUTDOWN.as_secs()
            );
        }
        drop(server);
        drop(tools);
        match served {
            Ok(()) => Ok(ExitCode::SUCCESS),
            Err(e) => {
                eprintln!("codemode: {e}");
                Ok(ExitCode::from(1))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::parse_http_addr;

    #[test]
    fn a_bare_port_binds_loopback() {
        assert_eq!(
            parse_http_addr("8931").unwrap().to_string(),
            "127.0.0.1:8931"
        );
        assert_eq!(parse_http_addr("0").unwrap().to_string(), "127.0.0.1:0");
        assert_eq!(
            parse_http_addr("localhost:8931").unwrap().to_string(),
            "127.0.0.1:8931"
        );
        assert_eq!(parse_http_addr("[::1]:80").unwrap().to_string(), "[::1]:80");
        assert_eq!(
            parse_http_addr("0.0.0.0:8931").unwrap().to_string(),
            "0.0.0.0:8931"
        );
        assert!(parse_http_addr("example.com:80").is_err());
    }
}
