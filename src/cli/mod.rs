//! The `codemode` command line: one file per subcommand under `commands/`.
//!
//! Exit status: 0 when the work ended ok, 1 when the program ended in error (the error is
//! in the output), 2 for a usage or set-up error.

mod commands;
mod limits;
mod setup;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Run model-written JavaScript/TypeScript programs against tools in a QuickJS sandbox.
#[derive(Debug, Parser)]
#[command(name = "codemode", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a program (a file, or `-` for standard input) and print its logs and result.
    Run(commands::run::RunCommand),
    /// Check a program against the tools without running it: syntax, tool names, argument
    /// objects (`--tsc`: also the TypeScript compiler).
    Check(commands::check::CheckCommand),
    /// Print the TypeScript declarations of the tools a program sees.
    Types(commands::types::TypesCommand),
    /// List the tools a program sees, with their descriptions.
    Tools(commands::tools::ToolsCommand),
    /// Serve run_code to an MCP client, over stdio or (--http) streamable HTTP.
    Mcp(commands::mcp::McpCommand),
}

/// Writes `text` to standard output. A reader that went away (`codemode run … | head`)
/// is not an error of ours: the rest of the output is dropped quietly. Any other failure
/// (a full disk) is said on stderr and ends the process with exit status 2: output that
/// was not written must not look like success.
pub(crate) fn out(text: &str) {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        Err(e) => {
            eprintln!("codemode: writing the output failed: {e}");
            std::process::exit(2);
        }
    }
}

/// A failure before the work could start: exit status 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct SetupError(pub(crate) String);

/// The async runtime for `command`. One program runs on one thread (its engine and its
/// nested calls on the task that polls it), so a command that runs one program needs one
/// thread. `mcp` serves sessions and requests at once: a thread per core for the protocol
/// (each call then runs on a thread of its own, see `codemode::mcp::server`).
fn runtime_for(command: &Command) -> std::io::Result<tokio::runtime::Runtime> {
    match command {
        Command::Mcp(_) => tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build(),
        _ => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build(),
    }
}

pub(crate) fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    let runtime = match runtime_for(&cli.command) {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("codemode: could not start the async runtime: {e}");
            return ExitCode::from(2);
        }
    };
    let result = runtime.block_on(async {
        match cli.command {
            Command::Run(c) => c.execute().await,
            Command::Check(c) => c.execute().await,
            Command::Types(c) => c.execute().await,
            Command::Tools(c) => c.execute().await,
            Command::Mcp(c) => c.execute().await,
        }
    });
    // The output is printed: a file operation still blocked in the kernel (a cancelled
    // read of a file that never ends) must not keep the process alive.
    runtime.shutdown_background();
    match result {
        Ok(code) => code,
        Err(SetupError(message)) => {
            eprintln!("codemode: {message}");
            ExitCode::from(2)
        }
    }
}
