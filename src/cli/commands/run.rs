//! `codemode run PROGRAM|-`: run a program and print what the model would see.

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use codemode::hooks::{Observer, Progress};
use codemode::jobs::JobStatus;
use codemode::run_code::{SpillConfig, render_text, run_code_resume_tool, run_code_tool};
use codemode::{Exec, Outcome};
use serde_json::{Value, json};

use crate::cli::SetupError;
use crate::cli::limits::RunLimits;
use crate::cli::setup::{PauseOptions, ToolOptions};
use crate::cli::status::eprint_line;

#[derive(Debug, Args)]
pub(crate) struct RunCommand {
    /// The program file (.ts or .js), or `-` to read it from standard input.
    program: String,
    #[command(flatten)]
    tools: ToolOptions,
    /// Print the canonical JSON value of the run instead of the model-facing text.
    #[arg(long)]
    pub(crate) json: bool,
    #[command(flatten)]
    limits: RunLimits,
    #[command(flatten)]
    pub(crate) paused: PauseOptions,
    /// Folder for spill files (the full output of a cut run). Default: `.codemode/spill`
    /// under `--root`, where the built-in `read_file` can read them.
    #[arg(long, value_name = "DIR")]
    spill_dir: Option<PathBuf>,
    /// Once the program has run TIME (`2s`, `500ms`, or milliseconds), go on with it as a background job (as
    /// `run_code`'s `yield_after_ms` does for a model) and show its progress on stderr: its
    /// console lines as they come, and a line every 5 s of silence. The result is printed
    /// when it ends, as without this option; Ctrl-C ends the job.
    #[arg(long = "yield-after", value_name = "TIME", value_parser = crate::cli::limits::parse_duration_ms)]
    yield_after: Option<u64>,
    /// Write the run's cards to FILE as JSON lines, for a UI: a `pending` line with the
    /// call card when a call starts, a `completed` line with the result card and the
    /// record it was drawn from when it ends (`run_code` and every call its program made;
    /// `token`/`parent` nest them).
    #[arg(long, value_name = "FILE")]
    cards: Option<PathBuf>,
    /// Write a report of the run to FILE: one self-contained HTML page with a timeline of
    /// every call, each call's cards, the console, the result or error with its line in the
    /// program, and how close the run came to each limit (README, "Run reports").
    #[arg(long, value_name = "FILE.html")]
    report: Option<PathBuf>,
    /// Print only the result (or the error): no console lines, no progress on stderr.
    #[arg(long, short = 'q', conflicts_with = "verbose")]
    pub(crate) quiet: bool,
    /// Report every tool call on stderr as a `tracing` span (tool, call id, parent,
    /// milliseconds, outcome); `RUST_LOG` sets a filter of its own.
    #[arg(long, short = 'v')]
    verbose: bool,
}

/// The text of a program: the file `program`, or standard input for `-`.
pub(crate) fn read_program(program: &str) -> Result<String, SetupError> {
    if program == "-" {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .map_err(|e| SetupError(format!("reading the program from standard input: {e}")))?;
        Ok(s)
    } else {
        let path = PathBuf::from(program);
        std::fs::read_to_string(&path).map_err(|e| SetupError(format!("{}: {e}", path.display())))
    }
}

impl RunCommand {
    /// Bytes of stack for the thread the program runs on.
    pub(crate) fn thread_stack(&self) -> usize {
        self.limits.thread_stack()
    }

    pub(crate) async fn execute(self) -> Result<ExitCode, SetupError> {
        let code = read_program(&self.program)?;
        self.perform(Work::Program(code)).await
    }

    /// What a report of this run is titled: the program's file name.
    fn title(&self) -> String {
        match self.program.as_str() {
            "-" => "standard input".to_owned(),
            path => std::path::Path::new(path)
                .file_name()
                .map_or(path.to_owned(), |n| n.to_string_lossy().into_owned()),
        }
    }

    /// The run command given by `args` (the words after `codemode run`).
    ///
    /// # Errors
    /// The words do not parse.
    pub(crate) fn parse(args: &[String]) -> Result<RunCommand, SetupError> {
        #[derive(clap::Parser)]
        struct Run {
            #[command(flatten)]
            run: RunCommand,
        }
        let words = std::iter::once("codemode run".to_owned()).chain(args.iter().cloned());
        <Run as clap::Parser>::try_parse_from(words)
            .map(|r| r.run)
            .map_err(|e| SetupError(format!("the paused run's command line: {e}")))
    }

    /// Sets up the tools, limits and observers of this command line and does `work`.
    pub(crate) async fn perform(self, work: Work) -> Result<ExitCode, SetupError> {
        if let (Some(report), Some(cards)) = (&self.report, &self.cards)
            && same_file(report, cards)
        {
            return Err(SetupError(format!(
                "--report {} and --cards {} name the same file; give each its own",
                report.display(),
                cards.display()
            )));
        }
        let tools = self.tools.load(false).await?;
        let root = self
            .tools
            .root
            .canonicalize()
            .unwrap_or(self.tools.root.clone());
        if let Some(dir) = &self.spill_dir
            && dir.exists()
            && !dir.is_dir()
        {
            return Err(SetupError(format!(
                "--spill-dir {}: not a folder",
                dir.display()
            )));
        }
        let spill = match &self.spill_dir {
            Some(dir) => SpillConfig::new(dir).read_root(root),
            None => SpillConfig::under_root(root),
        };
        let mut config = self.limits.run_code_config().spill(Some(spill));
        if self.tools.ask {
            // `codemode resume` rebuilds the same tools from this folder and command line.
            let cwd = std::env::current_dir()
                .map_err(|e| SetupError(format!("the current folder: {e}")))?;
            let args: Vec<String> = match &work {
                Work::Program(_) => std::env::args().skip(2).collect(),
                Work::Resume { command_line, .. } => command_line.clone(),
            };
            config = config
                .paused_runs(Some(self.paused.store()?))
                .paused_host(json!({"cwd": cwd, "args": args}));
        }
        crate::cli::status::init_tracing(self.verbose);
        let _trace = (self.verbose || std::env::var_os("RUST_LOG").is_some()).then(|| {
            tools
                .registry
                .observe(crate::cli::status::TraceCalls::new())
        });
        let _progress = (!self.quiet).then(|| tools.registry.observe(ProgressLines));
        let status = if self.quiet {
            None
        } else {
            crate::cli::status::StatusLine::start(&tools.registry)
        };
        let _cards = match &self.cards {
            None => None,
            Some(path) => {
                // A resumed run's cards follow those of the run up to its pause.
                let resumed = matches!(work, Work::Resume { .. });
                let file = std::fs::OpenOptions::new()
                    .create(true)
                    .write(true)
                    .append(resumed)
                    .truncate(!resumed)
                    .open(path)
                    .map_err(|e| SetupError(format!("--cards {}: {e}", path.display())))?;
                Some(
                    tools
                        .registry
                        .observe(CardLines(std::sync::Mutex::new(file))),
                )
            }
        };
        let report = match &self.report {
            None => None,
            Some(path) => {
                let file = ReportFile::open(path)?;
                let recorder = codemode::report::RunRecorder::new();
                let hook = tools.registry.observe(recorder.clone());
                Some((
                    file,
                    recorder,
                    hook,
                    config.limits.clone(),
                    config.output_cap,
                ))
            }
        };
        let program = match &work {
            Work::Program(code) => code.clone(),
            Work::Resume { .. } => String::new(),
        };
        let (tool, arguments) = match work {
            Work::Program(code) => {
                let mut arguments = json!({ "code": code });
                if let Some(ms) = self.yield_after {
                    arguments["yield_after_ms"] = json!(ms);
                }
                (codemode::run_code::RUN_CODE, arguments)
            }
            Work::Resume { id, decisions, .. } => (
                codemode::run_code::RUN_CODE_RESUME,
                json!({"id": id, "decisions": decisions}),
            ),
        };
        let _run = tools
            .registry
            .register(run_code_tool(config.clone()))
            .map_err(|e| SetupError(e.to_string()))?;
        let timeout = config.limits.timeout;
        let _resume = tools
            .registry
            .register(run_code_resume_tool(config))
            .map_err(|e| SetupError(e.to_string()))?;
        let overdue_report = report.as_ref().map(|(file, recorder, _, limits, cap)| {
            let (path, recorder, limits, cap) =
                (file.path.clone(), recorder.clone(), limits.clone(), *cap);
            let (title, program) = (self.title(), program.clone());
            Box::new(move |value: &Value| {
                let run = recorder.finish(
                    title.clone(),
                    program.clone(),
                    value.clone(),
                    limits.clone(),
                    cap,
                );
                std::fs::write(&path, codemode::report::render_html(&run))
                    .map_err(|e| format!("--report {}: {e}", path.display()))
            }) as OverdueReport
        });
        let armed = exit_if_overdue(self.json, self.quiet, overdue_report).arm();
        let started = std::time::Instant::now();
        // Cancelled by a signal: the engine's interrupt handler reads it, so a program in a
        // CPU loop stops as well.
        let stop = crate::cli::stop_signal();
        let request = codemode::Request::new(tool, arguments, stop.clone());
        let outcome = tools.registry.dispatch(request).await;
        drop(armed);
        if stop.is_cancelled() {
            // The command's own handling of the signal (`cli::execute`) ends it: exit 130,
            // not the cancelled run's error.
            std::future::pending::<()>().await;
        }
        let value = match outcome.into_result() {
            Ok(v) => v,
            Err(e) => return Err(SetupError(e.message().to_owned())),
        };
        let value = match value.get("status").and_then(Value::as_str) {
            Some("running") => {
                follow(&tools.registry, &value, started, timeout, self.quiet).await?
            }
            _ => value,
        };
        drop(status);
        // Jobs the program's tools started end with the command, and so do the processes
        // a job given up on still holds (its run had not stopped past its timeout).
        let jobs = tools.registry.jobs();
        jobs.shutdown().await;
        if jobs.stats().given_up > 0 {
            codemode::kill_process_groups();
        }
        let exit = print_run(
            &value,
            self.json,
            self.quiet,
            self.paused.paused_dir.as_deref(),
        );
        if let Some((mut file, recorder, hook, limits, cap)) = report {
            drop(hook);
            let run = recorder.finish(self.title(), program, value, limits, cap);
            if let Err(e) = file.write(&codemode::report::render_html(&run)) {
                // The run's output is printed; only the report is missing.
                eprintln!("codemode: --report {}: {e}", file.path.display());
                return Ok(ExitCode::from(2));
            }
        }
        Ok(exit)
    }
}

/// Whether two paths name the same file, whether or not it exists yet: each resolved
/// (symbolic links and `..` followed) as far as it exists.
fn same_file(a: &std::path::Path, b: &std::path::Path) -> bool {
    let resolve = |p: &std::path::Path| {
        std::fs::canonicalize(p).ok().or_else(|| {
            let parent = match p.parent() {
                Some(parent) if !parent.as_os_str().is_empty() => parent,
                _ => std::path::Path::new("."),
            };
            Some(std::fs::canonicalize(parent).ok()?.join(p.file_name()?))
        })
    };
    match (resolve(a), resolve(b)) {
        (Some(a), Some(b)) => a == b,
        _ => false,
    }
}

/// The file `--report` names, checked before the run: writable, and not a folder. A file
/// that was there is left as it is until the report replaces it; one made for the check is
/// removed again when no report is written (the run was interrupted).
struct ReportFile {
    path: PathBuf,
    made: bool,
    written: bool,
}

impl ReportFile {
    fn open(path: &std::path::Path) -> Result<ReportFile, SetupError> {
        let made = !path.exists();
        std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| SetupError(format!("--report {}: {e}", path.display())))?;
        Ok(ReportFile {
            path: path.to_owned(),
            made,
            written: false,
        })
    }

    fn write(&mut self, html: &str) -> std::io::Result<()> {
        std::fs::write(&self.path, html)?;
        self.written = true;
        Ok(())
    }
}

impl Drop for ReportFile {
    fn drop(&mut self) {
        if self.made && !self.written {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// What a run command does once its tools are set up.
pub(crate) enum Work {
    /// Runs a program.
    Program(String),
    /// Resumes the paused run `id` with `decisions` (`run_code_resume`'s); `command_line`
    /// is the paused run's, kept again if it pauses anew.
    Resume {
        id: String,
        decisions: Vec<Value>,
        command_line: Vec<String>,
    },
}

/// Prints a run's value (`json`: the canonical JSON, else the model-facing text; `quiet`:
/// without console lines); its exit status: 0 ok, 1 error, 3 paused (with how to resume on
/// stderr; `paused_dir`: the `--paused-dir` given).
fn print_run(
    value: &Value,
    json: bool,
    quiet: bool,
    paused_dir: Option<&std::path::Path>,
) -> ExitCode {
    if json {
        crate::cli::out(&format!(
            "{}\n",
            serde_json::to_string_pretty(value).unwrap_or_default()
        ));
    } else {
        let mut shown = value.clone();
        if quiet && let Some(logs) = shown.get_mut("logs") {
            *logs = Value::Array(Vec::new());
        }
        crate::cli::out(&format!("{}\n", render_text(&shown)));
    }
    match value.get("status").and_then(Value::as_str) {
        Some("ok") => ExitCode::SUCCESS,
        Some("paused") => {
            let paused = value.get("paused");
            let id = paused
                .and_then(|p| p.get("id"))
                .and_then(Value::as_str)
                .unwrap_or_default();
            let calls: Vec<String> = paused
                .and_then(|p| p.get("approvals"))
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|a| a.get("call").and_then(Value::as_u64))
                .map(|c| format!("--approve {c}"))
                .collect();
            let dir = paused_dir
                .map(|d| format!(" --paused-dir {}", d.display()))
                .unwrap_or_default();
            eprintln!(
                "codemode: the run paused for approval; continue it with: codemode resume {id} {}{dir} (or --deny N)",
                calls.join(" ")
            );
            ExitCode::from(3)
        }
        _ => ExitCode::from(1),
    }
}

/// The arm of the run this command starts: if it has not answered
/// [`ABANDON_AFTER`](codemode::run_code::ABANDON_AFTER) past its timeout, the process
/// prints the run's `TimeoutError` (as the run's value, in JSON with `json`) and exits with
/// status 1, as a run that timed out does. That happens only to a program in a loop over a
/// slow built-in that allocates nothing, which the engine stops at its next check, minutes
/// later. The processes its tools started are killed (see [`codemode::kill_process_groups`])
/// and the `--report` is written (`report`), with that error and the calls in flight drawn
/// as still running; one that cannot be written exits with status 2, as after any run.
fn exit_if_overdue(
    json: bool,
    quiet: bool,
    report: Option<OverdueReport>,
) -> codemode::run_code::OverdueArm {
    codemode::run_code::OverdueArm::new(move |timeout| {
        crate::cli::status::silence();
        // The run's calls still hold their processes: exiting drops nothing.
        codemode::kill_process_groups();
        let value = codemode::run_code::abandoned_value(timeout);
        print_run(&value, json, quiet, None);
        if let Some(Err(e)) = report.as_ref().map(|write| write(&value)) {
            eprintln!("codemode: {e}");
            std::process::exit(2);
        }
        std::process::exit(1);
    })
}

/// Writes the `--report` of a run given up on, with its final value (see
/// [`exit_if_overdue`]); the error names the file.
type OverdueReport = Box<dyn Fn(&Value) -> Result<(), String> + Send + Sync>;

/// Follows a run that went on as a background job (`--yield-after`) to its end, printing
/// its console lines on stderr as they come and a line every 5 s of silence until its
/// `timeout`, then one line if it has not stopped a second past it; returns the run's final
/// value. Ctrl-C ends the job (its final value then says it was cancelled).
async fn follow(
    registry: &codemode::Registry,
    running: &Value,
    started: std::time::Instant,
    timeout: Duration,
    quiet: bool,
) -> Result<Value, SetupError> {
    let id = running
        .get("job_id")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let show = |text: &str| {
        if quiet {
            return;
        }
        for line in text.lines() {
            eprint_line(&format!("codemode: {id}: {line}"));
        }
    };
    show(running.get("output").and_then(Value::as_str).unwrap_or(""));
    let jobs = registry.jobs();
    let owner = registry.agent();
    let never = tokio_util::sync::CancellationToken::new();
    let stop = crate::cli::stop_signal();
    let interrupt = stop.cancelled();
    tokio::pin!(interrupt);
    let mut quiet_since = std::time::Instant::now();
    // A run normally ends within moments of its timeout; one still going a second later is
    // said to be overdue, once.
    const OVERDUE_AFTER: Duration = Duration::from_secs(1);
    let mut said_overdue = false;
    loop {
        let read = jobs.output(&id, owner, 1 << 16, Duration::from_secs(1), &never);
        let report = tokio::select! {
            report = read => report,
            () = &mut interrupt => {
                eprint_line(&format!("codemode: {id}: interrupted; ending the job"));
                jobs.kill(&id, owner, Duration::from_secs(10)).await
            }
        }
        .map_err(|e| SetupError(e.to_string()))?;
        if report.output.is_empty() {
            let elapsed = started.elapsed();
            if quiet || said_overdue {
                // Nothing more to say.
            } else if elapsed > timeout + OVERDUE_AFTER {
                eprint_line(&format!(
                    "codemode: {id} has not stopped at its {} ms timeout; it is given up on {} s past it",
                    timeout.as_millis(),
                    codemode::run_code::ABANDON_AFTER.as_secs()
                ));
                said_overdue = true;
            } else if elapsed <= timeout && quiet_since.elapsed() >= Duration::from_secs(5) {
                eprint_line(&format!(
                    "codemode: {id} still running ({} s)",
                    elapsed.as_secs()
                ));
                quiet_since = std::time::Instant::now();
            }
        } else {
            show(&report.output.text);
            quiet_since = std::time::Instant::now();
        }
        match report.status {
            JobStatus::Running => {}
            JobStatus::Finished(value) => return Ok(value),
            JobStatus::Failed(message) => return Err(SetupError(message)),
            JobStatus::Killed(_) => {
                return Err(SetupError(format!(
                    "the run ({id}) was ended before it finished"
                )));
            }
        }
    }
}

/// Writes each call's cards as JSON lines (`--cards`).
struct CardLines(std::sync::Mutex<std::fs::File>);

impl CardLines {
    fn write(&self, line: &Value) {
        use std::io::Write;
        let mut file = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let _ = writeln!(file, "{line}");
    }

    fn ids(exec: &Exec) -> Value {
        json!({
            "call": exec.call_id().get(),
            "token": exec.token().to_string(),
            "parent": exec.parent().map(|p| p.to_string()),
            "tool": exec.name(),
        })
    }
}

impl Observer for CardLines {
    fn started(&self, exec: &Exec) {
        let Some(tool) = exec.registry().and_then(|r| r.get(exec.name())) else {
            return;
        };
        let mut line = Self::ids(exec);
        line["event"] = json!("pending");
        line["card"] =
            serde_json::to_value(tool.present_call(exec.arguments())).unwrap_or_default();
        self.write(&line);
    }

    fn observe(&self, exec: &Exec, outcome: &Outcome) {
        let Some(tool) = exec.registry().and_then(|r| r.get(exec.name())) else {
            return;
        };
        let mut line = Self::ids(exec);
        if outcome.error_kind() == Some(codemode::ErrorKind::NeedsApproval) {
            // Not over: the run paused at it, and its call card says what waits.
            line["event"] = json!("paused");
            line["prompt"] = json!(outcome.error_info().map(|e| e.message()));
            line["card"] =
                serde_json::to_value(tool.present_call(exec.arguments())).unwrap_or_default();
            self.write(&line);
            return;
        }
        let record = codemode::cards::CardRecord::of(exec, outcome);
        line["event"] = json!("completed");
        line["ms"] = json!(outcome.elapsed().as_millis() as u64);
        line["card"] = serde_json::to_value(tool.present_result(exec.arguments(), outcome))
            .unwrap_or_default();
        line["record"] = serde_json::to_value(&record).unwrap_or_default();
        self.write(&line);
    }
}

/// Prints each progress report of a running call on stderr, apart from the program's
/// output: `codemode: progress: everything.trigger-long-running-operation 2/5 step 2`.
struct ProgressLines;

impl Observer for ProgressLines {
    fn observe(&self, _exec: &Exec, _outcome: &Outcome) {}

    fn progress(&self, exec: &Exec, progress: &Progress) {
        eprint_line(&format!(
            "codemode: progress: {}",
            progress.describe(exec.name())
        ));
    }
}
