//! `run_code`'s body: a foreground run, a run started as a background job
//! (`run_in_background`), or a foreground run that turns into one past `yield_after_ms`.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::spill::SharedSpill;
use super::{ProgramError, RunCodeConfig, present};
use crate::dispatch::jobs::{JobEnd, JobSpec, JobStatus, OutputBuffer, Producer, Waited};
use crate::dispatch::{Arguments, Exec, ToolError};
use crate::sandbox::journal::Recorder;
use crate::sandbox::{self, LogSink, RunRequest};

/// The `run_code` call: see [`run_code_tool`](super::run_code_tool).
pub(super) async fn execute(
    config: RunCodeConfig,
    args: Arguments,
    exec: Exec,
) -> Result<Value, ToolError> {
    let registry = exec
        .registry()
        .ok_or_else(|| ToolError::new("the registry that ran run_code is gone"))?;
    let background = args.get("run_in_background").and_then(Value::as_bool) == Some(true);
    let yield_after = args
        .get("yield_after_ms")
        .and_then(Value::as_u64)
        .map(Duration::from_millis)
        .or(config.yield_after)
        // 0 waits for the end, as `--yield-after 0` does.
        .filter(|d| !d.is_zero());
    let asked = args
        .get("timeout_ms")
        .and_then(Value::as_u64)
        .map(Duration::from_millis);
    let code = args.str("code").unwrap_or_default().to_owned();

    let timeout_ms = asked.map(|t| t.as_millis() as u64);
    if !background && yield_after.is_none() {
        let mut run = Run::new(&config, &registry, &exec, code);
        if let Some(t) = asked {
            run.request.limits.timeout = t.min(config.max_timeout);
        }
        return run.finish(&config, &registry, timeout_ms).await;
    }

    // A run that may outlive the call: a job from the start, with the longer timeout.
    if exec.signal().is_cancelled() {
        return Err(ToolError::cancelled());
    }
    let timeout = asked
        .unwrap_or(config.background_timeout)
        .min(config.background_timeout.max(config.max_timeout));
    let label = label_of(&code);
    let stack = config.limits.thread_stack();
    let progress = if background {
        // The call answers at once: nobody hears its progress after that.
        None
    } else {
        exec.progress_sink().cloned()
    };
    let job_config = config.clone();
    let job_registry = registry.clone();
    let job_exec = exec.clone();
    let mut spec = JobSpec::new(
        super::RUN_CODE,
        label,
        exec.agent().clone(),
        stack,
        move |context| {
            let buffer: Arc<OutputBuffer> = context.output_buffer();
            let mut run = Run::new(&job_config, &job_registry, &job_exec, code);
            run.request.limits.timeout = timeout;
            run.request.signal = context.signal.clone();
            run.request.progress = progress;
            run.request.log_tap = Some(buffer.clone());
            let signal = context.signal.clone();
            let done = async move {
                match run
                    .finish(&job_config, &job_registry, Some(timeout.as_millis() as u64))
                    .await
                {
                    Ok(value) => JobEnd::Finished(value),
                    Err(e) => JobEnd::Failed(e.message().to_owned()),
                }
            };
            Producer {
                cancel: Box::new(move || signal.cancel()),
                done: Box::pin(done),
                read_output: Some(Box::new(move |max| buffer.read(max))),
            }
        },
    );
    // A run that does not stop at its timeout ends its job 5 s later (see `ABANDON_AFTER`).
    spec = spec.on_overdue(|timeout| JobEnd::Finished(super::abandoned_value(timeout)));
    if !background {
        spec = spec.held();
    }
    let jobs = registry.jobs();
    let handle = jobs.start(spec)?;
    if background {
        return Ok(handle.to_value());
    }
    let id = handle.job_id;
    let wait = yield_after.unwrap_or_default();
    match jobs.wait_for_end(&id, wait, exec.signal()).await {
        Waited::Ended(status) => {
            jobs.forget(&id);
            outcome_of(status)
        }
        Waited::Cancelled => {
            // Cancelled before it was handed out: the run is the call's, and ends with it.
            let status = jobs.end_held(&id).await;
            jobs.forget(&id);
            match status {
                Some(JobStatus::Finished(v)) => Ok(v),
                _ => Err(ToolError::cancelled()),
            }
        }
        Waited::Running => match jobs.publish(&id) {
            Ok(Some(status)) => {
                jobs.forget(&id);
                outcome_of(status)
            }
            // No room for another background job: the run stays in the foreground, to its
            // end or its timeout.
            Err(_) => match jobs
                .wait_for_end(&id, Duration::from_secs(365 * 86_400), exec.signal())
                .await
            {
                Waited::Ended(status) => {
                    jobs.forget(&id);
                    outcome_of(status)
                }
                _ => {
                    let status = jobs.end_held(&id).await;
                    jobs.forget(&id);
                    match status {
                        Some(JobStatus::Finished(v)) => Ok(v),
                        _ => Err(ToolError::cancelled()),
                    }
                }
            },
            Ok(None) => {
                let so_far = jobs.read_now(&id, config.output_cap);
                Ok(json!({
                    "status": "running",
                    "job_id": id,
                    "output": so_far.text,
                }))
            }
        },
    }
}

/// The value or error of a held run that ended while its call waited.
fn outcome_of(status: JobStatus) -> Result<Value, ToolError> {
    match status {
        JobStatus::Finished(v) => Ok(v),
        JobStatus::Failed(m) => Err(ToolError::new(m)),
        JobStatus::Killed(_) => Err(ToolError::cancelled()),
        JobStatus::Running => Err(ToolError::new("the run had not ended")),
    }
}

/// How the error of a resumed program that diverged from its journal starts.
pub(super) const DIVERGED: &str = "the resumed program did not do what it did before it paused, so it was stopped and nothing more ran: ";

/// A run's request and its spill.
pub(super) struct Run {
    pub(super) request: RunRequest,
    spill: Option<SharedSpill>,
    /// The `run_code` call, told what the run used.
    exec: Exec,
}

impl Run {
    /// Runs the program, and keeps the run when it paused; its canonical value.
    ///
    /// # Errors
    /// A resumed program that diverged from its journal.
    pub(super) async fn finish(
        self,
        config: &RunCodeConfig,
        registry: &crate::Registry,
        timeout_ms: Option<u64>,
    ) -> Result<Value, ToolError> {
        let code = self.request.source.clone();
        let started = std::time::Instant::now();
        let mut report = sandbox::run(self.request, config.engine_pool.as_ref()).await;
        self.exec.run_finished(&report.usage(started.elapsed()));
        if let Some(divergence) = report.diverged.take() {
            return Err(ToolError::new(format!("{DIVERGED}{divergence}")));
        }
        let pause = match report.paused.take() {
            None => None,
            Some(paused) => match super::resume::keep(paused, config, registry, code, timeout_ms) {
                Ok(info) => Some(info),
                Err(e) => {
                    report.result = Err(ProgramError::internal(format!(
                        "the run paused for approval but could not be kept, so the calls that waited never ran: {e}"
                    )));
                    None
                }
            },
        };
        Ok(present(report, self.spill, config, pause))
    }

    pub(super) fn new(
        config: &RunCodeConfig,
        registry: &crate::Registry,
        exec: &Exec,
        code: String,
    ) -> Run {
        let tools = registry
            .sandbox_tools()
            .into_iter()
            .map(|t| (t.name().to_owned(), crate::dispatch::tool_alias(t.name())))
            .collect();
        let spill = config.spill.clone().map(SharedSpill::new);
        Run {
            request: RunRequest {
                source: code,
                limits: config.limits.clone(),
                registry: registry.clone(),
                tools,
                parent: Some(exec.token()),
                progress: exec.progress_sink().cloned(),
                agent: exec.agent().clone(),
                signal: exec.signal().clone(),
                log_sink: spill.clone().map(|s| Box::new(s) as Box<dyn LogSink>),
                log_tap: None,
                // Recorded only when a call could wait for a decision nobody gives now.
                journal: (config.paused_runs.is_some() && registry.asks_wait(exec))
                    .then(|| Recorder::new(config.max_journal_bytes)),
            },
            spill,
            exec: exec.clone(),
        }
    }
}

/// A job's label: the program's first non-empty line, cut to 60 characters.
fn label_of(code: &str) -> String {
    let line = code
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with("```"))
        .unwrap_or("");
    let mut label: String = line.chars().take(60).collect();
    if line.chars().count() > 60 {
        label.push('…');
    }
    label
}
