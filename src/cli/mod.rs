//! The `codemode` command line: one file per subcommand under `commands/`.
//!
//! Exit status: 0 when the work ended ok, 1 when the program ended in error (the error is
//! in the output), 2 for a usage or set-up error, 3 when the run paused for approval.

mod commands;
mod limits;
mod policy;
mod setup;
mod status;

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
    #[command(
        after_help = "Example:\n  codemode run examples/word_stats.ts --root . --tools examples/tools/manifest.json\n  echo 'return (await tools.glob({pattern: \"**/*.rs\"})).total' | codemode run - --timeout 10s\n  codemode run fix.ts --allow write --allow shell --allow net=docs.rs"
    )]
    Run(commands::run::RunCommand),
    /// Continue a run that paused for approval (`run --ask` without a terminal).
    #[command(
        after_help = "Example:\n  codemode run fix.ts --ask --json > paused.json   # exit status 3: paused\n  codemode resume p19a3c5e0b21-6f0c2d9e81b4a7f3 --approve 2"
    )]
    Resume(commands::resume::ResumeCommand),
    /// Check a program against the tools without running it: syntax, tool names, argument
    /// objects (`--tsc`: also the TypeScript compiler).
    #[command(
        after_help = "Example:\n  codemode check examples/word_stats.ts --tools examples/tools/manifest.json --tsc"
    )]
    Check(commands::check::CheckCommand),
    /// Print the TypeScript declarations of the tools a program sees.
    #[command(
        after_help = "Example:\n  codemode types --tools examples/tools/manifest.json > tools.d.ts"
    )]
    Types(commands::types::TypesCommand),
    /// List the tools a program sees, with their descriptions.
    #[command(
        after_help = "Example:\n  codemode tools --mcp everything=\"npx @modelcontextprotocol/server-everything\""
    )]
    Tools(commands::tools::ToolsCommand),
    /// Serve run_code to an MCP client, over stdio or (--http) streamable HTTP.
    #[command(
        after_help = "Example:\n  codemode mcp --root /path/to/project --allow write\n  codemode mcp --root . --http 8931 --yield-after 5s"
    )]
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

/// Completes on Ctrl-C, or (on Unix) SIGTERM or SIGHUP: what a terminal, a supervisor or
/// an MCP client that closes a stdio server sends.
pub(crate) async fn shutdown_signal() {
    let interrupt = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        use tokio::signal::unix::{SignalKind, signal};
        match (
            signal(SignalKind::terminate()),
            signal(SignalKind::hangup()),
        ) {
            (Ok(mut term), Ok(mut hup)) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = hup.recv() => {}
                }
            }
            _ => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => {}
        () = terminate => {}
    }
}

/// Cancelled once the process gets Ctrl-C, SIGTERM or SIGHUP (see [`watch_signals`]).
static STOP: std::sync::OnceLock<tokio_util::sync::CancellationToken> = std::sync::OnceLock::new();

/// The process's stop signal: cancelled by Ctrl-C, SIGTERM or SIGHUP once
/// [`watch_signals`] runs. A run's `run_code` call takes it as its signal, so a program in
/// a CPU loop stops too: the engine's interrupt handler reads it, while the run's thread
/// never gets to await a signal.
pub(crate) fn stop_signal() -> tokio_util::sync::CancellationToken {
    STOP.get_or_init(tokio_util::sync::CancellationToken::new)
        .clone()
}

/// Set once the command's own code saw [`stop_signal`] (see [`watch_signals`]).
static NOTICED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// How long a command has, after a signal, to notice it before the process ends anyway.
const HARD_STOP_AFTER: std::time::Duration = std::time::Duration::from_secs(2);

/// Watches for the signals of [`shutdown_signal`] on a thread of its own, which cancels
/// [`stop_signal`]: the run's thread may be busy in the engine when one comes.
///
/// A program in a loop whose turns spend their time in built-ins (and catch what a stopped
/// run's refused memory makes them throw) looks at the signal only at the engine's next
/// interrupt check, which can be minutes away. If the command has not noticed the signal
/// within [`HARD_STOP_AFTER`], this thread ends the process (status 130), killing the
/// processes the run's tools started first ([`codemode::kill_process_groups`]).
fn watch_signals() -> std::io::Result<()> {
    let stop = stop_signal();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    std::thread::Builder::new()
        .name("codemode-signals".into())
        .spawn(move || {
            runtime.block_on(shutdown_signal());
            stop.cancel();
            std::thread::sleep(HARD_STOP_AFTER);
            if !NOTICED.load(std::sync::atomic::Ordering::SeqCst) {
                status::silence();
                codemode::kill_process_groups();
                eprintln!(
                    "codemode: stopped by a signal (the program did not stop within {} s)",
                    HARD_STOP_AFTER.as_secs()
                );
                std::process::exit(130);
            }
        })?;
    Ok(())
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

/// Ends the MCP servers of a finished command in order ([`setup::close_servers`]); a
/// signal meanwhile kills them at once.
async fn close_servers_unless_stopped(stopped: impl std::future::Future<Output = ()>) {
    tokio::select! {
        () = setup::close_servers(true) => {}
        () = stopped => {}
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
    // `run` runs its program on this thread: one with the stack its engine limit needs
    // (`Limits::thread_stack`), whatever the process's own stack is.
    let stack = match &cli.command {
        Command::Run(run) => run.thread_stack(),
        Command::Resume(resume) => resume.thread_stack(),
        _ => return execute(cli),
    };
    let main = std::thread::Builder::new()
        .name("codemode-run".into())
        .stack_size(stack)
        .spawn(move || execute(cli));
    match main.map(std::thread::JoinHandle::join) {
        Ok(Ok(code)) => code,
        Ok(Err(_)) => {
            eprintln!("codemode: internal error: the run's thread panicked");
            ExitCode::from(2)
        }
        Err(e) => {
            eprintln!(
                "codemode: could not start a thread with {} MiB of stack for the run: {e}",
                stack >> 20
            );
            ExitCode::from(2)
        }
    }
}

/// Runs the parsed command on this thread.
fn execute(cli: Cli) -> ExitCode {
    let serves = matches!(cli.command, Command::Mcp(_));
    let runtime = match runtime_for(&cli.command) {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("codemode: could not start the async runtime: {e}");
            return ExitCode::from(2);
        }
    };
    // `mcp` handles the signals itself, to end its sessions in order; the other commands
    // watch them on a thread of their own.
    if !serves && let Err(e) = watch_signals() {
        eprintln!("codemode: could not start the thread that watches for signals: {e}");
        return ExitCode::from(2);
    }
    let stop = stop_signal();
    let result = runtime.block_on(async {
        let work = async {
            match cli.command {
                Command::Run(c) => c.execute().await,
                Command::Resume(c) => c.execute().await,
                Command::Check(c) => c.execute().await,
                Command::Types(c) => c.execute().await,
                Command::Tools(c) => c.execute().await,
                Command::Mcp(c) => c.execute().await,
            }
        };
        let result = if serves {
            let result = work.await;
            close_servers_unless_stopped(shutdown_signal()).await;
            result
        } else {
            // Stopped by a signal, the work is dropped: its MCP servers are killed below. The
            // signal is looked at first: work that also saw it (a run followed as a job ends
            // its job on a signal) must not turn the signal's exit status into its own.
            tokio::select! {
                biased;
                () = stop.cancelled() => {
                    NOTICED.store(true, std::sync::atomic::Ordering::SeqCst);
                    status::eprint_line("codemode: stopped by a signal");
                    // A run that went on as a job (--yield-after) ends with its processes.
                    setup::shutdown_jobs(std::time::Duration::from_secs(5)).await;
                    Ok(ExitCode::from(130))
                }
                result = work => {
                    close_servers_unless_stopped(stop.cancelled()).await;
                    result
                }
            }
        };
        // What is left (the servers of work stopped by a signal) is killed at once, and so
        // is any process a run given up on still holds (it stops only at its engine's next
        // check, and the process ends before that).
        setup::close_servers(false).await;
        codemode::kill_process_groups();
        result
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
