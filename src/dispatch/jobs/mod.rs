//! Background jobs: work that outlives the call that started it.
//!
//! A [`Jobs`] runtime belongs to a [`Registry`](super::Registry) ([`Registry::jobs`]).
//! [`Jobs::start`] checks that the owner (an [`Agent`]) is live and that the runtime
//! accepts jobs *before* the producer's `run` does any work, publishes a job id
//! (`"<kind>-<n>"`) and returns the typed handle `{"kind": "background", "job_id": "…"}`.
//! From then on the job runs on a thread of its own under its own cancellation signal:
//! cancelling the call that started it stops nothing. Three things end a job early: a
//! kill ([`Jobs::kill`], the `job_kill` tool), the owner's disposal ([`Agent::dispose`],
//! an MCP session ending) and the runtime's shutdown ([`Jobs::shutdown`]). Each calls the
//! producer's synchronous `cancel`, fires the job's signal and waits for its `done`, so a
//! job ends only after its cleanup (no task, engine or child process left).
//!
//! Bounds ([`JobsConfig`]): running jobs per owner and in all (past either, a
//! [`JobError`] and nothing starts), unread output per job, and how long a finished job's
//! outcome is kept (then `job_output` answers that it expired).
//!
//! When a job ends its owner is told through [`Agent::inject`] (context for the next model
//! request); a disposed owner is skipped.
//!
//! [`Registry::jobs`]: super::Registry::jobs

mod output;
pub(crate) mod tools;

use std::collections::VecDeque;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use indexmap::IndexMap;
use serde_json::{Value, json};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::run_code::ABANDON_AFTER;

pub use self::output::{OutputBuffer, OutputRead};
pub use self::tools::{DEFAULT_READ_BYTES, MAX_WAIT_MS, RUN_IN_BACKGROUND, register_job_tools};
use super::agent::Agent;
use super::tool::{ErrorKind, ToolError};

/// Bounds of a [`Jobs`] runtime. Defaults in brackets.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct JobsConfig {
    /// Jobs running at once for one owner \[16\].
    pub max_running_per_owner: usize,
    /// Jobs running at once in all \[64\].
    pub max_running: usize,
    /// How long a finished job's outcome and unread output are kept \[10 minutes\].
    pub keep_finished: Duration,
    /// Finished jobs kept at most, oldest dropped first \[256\].
    pub max_finished: usize,
    /// Unread output kept per job, in bytes; older bytes are dropped and counted \[1 MiB\].
    pub max_unread_output: usize,
    /// Largest finished value kept, in bytes of JSON; a larger one is replaced by a
    /// message saying its size \[1 MiB\].
    pub max_kept_value: usize,
}

impl Default for JobsConfig {
    fn default() -> Self {
        JobsConfig {
            max_running_per_owner: 16,
            max_running: 64,
            keep_finished: Duration::from_secs(600),
            max_finished: 256,
            max_unread_output: 1 << 20,
            max_kept_value: 1 << 20,
        }
    }
}

impl JobsConfig {
    /// Sets both bounds on running jobs.
    pub fn max_running(mut self, per_owner: usize, total: usize) -> Self {
        self.max_running_per_owner = per_owner;
        self.max_running = total;
        self
    }

    /// Sets how long a finished job is kept.
    pub fn keep_finished(mut self, keep: Duration) -> Self {
        self.keep_finished = keep;
        self
    }
}

/// Why a job could not start, or could not be found.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum JobError {
    /// The owner was disposed.
    #[error("the conversation that would own the job has ended; no job was started")]
    OwnerGone,
    /// The runtime is shutting down.
    #[error("background jobs are shutting down; no job was started")]
    ShuttingDown,
    /// The owner has `limit` jobs running.
    #[error(
        "too many background jobs: {limit} of this conversation are running; wait for one or end it with job_kill"
    )]
    TooManyForOwner {
        /// The bound.
        limit: usize,
    },
    /// `limit` jobs are running in all.
    #[error("too many background jobs: {limit} are running on this host; wait for one to end")]
    TooMany {
        /// The bound.
        limit: usize,
    },
    /// The job's thread could not start.
    #[error("the background job could not start a thread: {0}")]
    Thread(String),
    /// The call was cancelled before the job started.
    #[error("the call was cancelled before its job started")]
    Cancelled,
    /// No job of this owner has that id.
    #[error("no background job {0:?} (job_list lists yours)")]
    Unknown(String),
    /// The job ended and its outcome was dropped.
    #[error(
        "background job {id} expired: it ended and its output was dropped (a finished job is kept {kept})"
    )]
    Expired {
        /// The id.
        id: String,
        /// How long a finished job is kept, as text (`10 min`, `500 ms`).
        kept: String,
    },
}

impl From<JobError> for ToolError {
    fn from(e: JobError) -> ToolError {
        let kind = match e {
            JobError::TooMany { .. } | JobError::TooManyForOwner { .. } => ErrorKind::Limit,
            JobError::Cancelled => ErrorKind::Cancelled,
            _ => ErrorKind::Failed,
        };
        ToolError::with_kind(kind, e.to_string())
    }
}

/// How a producer's work ended (its `done`; never an error of its own).
#[derive(Clone, Debug, PartialEq)]
pub enum JobEnd {
    /// It finished with this value.
    Finished(Value),
    /// It failed with this message.
    Failed(String),
}

/// Why a job was ended early.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KillReason {
    /// `job_kill` or [`Jobs::kill`].
    Killed,
    /// Its owner was disposed.
    OwnerGone,
    /// The runtime shut down.
    Shutdown,
}

impl KillReason {
    fn as_str(self) -> &'static str {
        match self {
            KillReason::Killed => "killed",
            KillReason::OwnerGone => "its conversation ended",
            KillReason::Shutdown => "the host shut down",
        }
    }
}

/// Where a job is.
#[derive(Clone, Debug, PartialEq)]
pub enum JobStatus {
    /// Still working.
    Running,
    /// Finished with a value.
    Finished(Value),
    /// Failed with a message.
    Failed(String),
    /// Ended early.
    Killed(KillReason),
}

impl JobStatus {
    /// `running`, `finished`, `failed` or `killed`.
    pub fn as_str(&self) -> &'static str {
        match self {
            JobStatus::Running => "running",
            JobStatus::Finished(_) => "finished",
            JobStatus::Failed(_) => "failed",
            JobStatus::Killed(_) => "killed",
        }
    }
}

/// The producer's side of the contract, returned by the `run` of [`JobSpec`].
pub struct Producer {
    /// Asks the work to stop; must not block. Called at most once.
    pub cancel: Box<dyn Fn() + Send + Sync>,
    /// Settles once the work and its cleanup are over; never fails.
    pub done: BoxFuture<'static, JobEnd>,
    /// Takes up to that many bytes of output not read before (see [`OutputBuffer`]).
    pub read_output: Option<Box<dyn Fn(usize) -> OutputRead + Send + Sync>>,
}

impl fmt::Debug for Producer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Producer")
            .field("read_output", &self.read_output.is_some())
            .finish_non_exhaustive()
    }
}

/// What a producer's `run` receives once the job's id is published.
#[derive(Debug)]
pub struct JobContext {
    /// The job's id.
    pub id: String,
    /// The job's own cancellation signal (not the starting call's).
    pub signal: CancellationToken,
    news: Arc<Notify>,
    max_unread_output: usize,
}

impl JobContext {
    /// A bounded output buffer bound to this job: what the producer pushes wakes readers
    /// waiting for news. Hand `buffer.reader()`-like reads to [`Producer::read_output`].
    pub fn output_buffer(&self) -> Arc<OutputBuffer> {
        Arc::new(OutputBuffer::new(self.max_unread_output, self.news.clone()))
    }
}

/// What [`Jobs::start`] needs.
pub struct JobSpec {
    /// The job's kind (its id's prefix), such as the tool's name: `run_code` → `run_code-1`.
    pub kind: String,
    /// A short human label (the program's first line, the command).
    pub label: String,
    /// The conversation the job belongs to.
    pub owner: Agent,
    /// Bytes of stack for the job's thread.
    pub stack: usize,
    /// Starts the work (builds the producer); called only once the job may run. It must
    /// not start jobs itself.
    pub run: Box<dyn FnOnce(&JobContext) -> Producer + Send>,
    /// Held back: not yet handed to anyone (a foreground run that may still finish in
    /// time); its end tells the owner nothing until [`Jobs::publish`].
    held: bool,
    /// How the job ends when the run it started is overdue (see [`JobSpec::on_overdue`]).
    overdue: Option<OnOverdueEnd>,
}

/// How a job ends when its run is overdue, from the run's timeout.
type OnOverdueEnd = Box<dyn Fn(Duration) -> JobEnd + Send + Sync>;

impl JobSpec {
    /// A job of `kind` for `owner`, on a thread of `stack` bytes, whose work `run` starts.
    pub fn new(
        kind: impl Into<String>,
        label: impl Into<String>,
        owner: Agent,
        stack: usize,
        run: impl FnOnce(&JobContext) -> Producer + Send + 'static,
    ) -> JobSpec {
        JobSpec {
            kind: kind.into(),
            label: label.into(),
            owner,
            stack,
            run: Box::new(run),
            held: false,
            overdue: None,
        }
    }

    /// Holds the job back until [`Jobs::publish`]: until then its end is not announced to
    /// the owner, and [`Jobs::wait_for_end`] + [`Jobs::forget`] may take its outcome
    /// instead.
    pub(crate) fn held(mut self) -> JobSpec {
        self.held = true;
        self
    }

    /// When the run the job's work starts has not stopped
    /// [`ABANDON_AFTER`](crate::run_code::ABANDON_AFTER) past its timeout, the job ends
    /// with `end(timeout)` while its thread goes on: handed out, it counts toward the bounds
    /// until the thread ends. At most `max_running` such threads at once; past them a job
    /// waits for its run's end as any other.
    pub(crate) fn on_overdue(
        mut self,
        end: impl Fn(Duration) -> JobEnd + Send + Sync + 'static,
    ) -> JobSpec {
        self.overdue = Some(Box::new(end));
        self
    }
}

/// What [`Jobs::wait_for_end`] saw.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Waited {
    Ended(JobStatus),
    Running,
    Cancelled,
}

impl fmt::Debug for JobSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JobSpec")
            .field("kind", &self.kind)
            .field("label", &self.label)
            .finish_non_exhaustive()
    }
}

/// The typed handle of a started job: `{"kind": "background", "job_id": "…"}`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobHandle {
    /// The job's id.
    pub job_id: String,
}

impl JobHandle {
    /// The canonical JSON value of the handle.
    pub fn to_value(&self) -> Value {
        json!({"kind": "background", "job_id": self.job_id})
    }

    /// The handle in `value`, when it is one.
    pub fn from_value(value: &Value) -> Option<JobHandle> {
        let o = value.as_object()?;
        if o.len() != 2 || o.get("kind")?.as_str()? != "background" {
            return None;
        }
        Some(JobHandle {
            job_id: o.get("job_id")?.as_str()?.to_owned(),
        })
    }
}

/// One job's state as `job_output` and `job_list` report it.
#[derive(Clone, Debug, PartialEq)]
pub struct JobReport {
    /// Its id.
    pub job_id: String,
    /// Its kind.
    pub kind: String,
    /// Its label.
    pub label: String,
    /// Where it is.
    pub status: JobStatus,
    /// Milliseconds since it started (to its end, once ended).
    pub elapsed_ms: u64,
    /// The output read by this report (empty for `job_list`).
    pub output: OutputRead,
}

impl JobReport {
    /// The report as JSON: `{job_id, kind, label, status, elapsed_ms, output, value?,
    /// error?, reason?}`.
    pub fn to_value(&self) -> Value {
        let mut v = json!({
            "job_id": self.job_id,
            "kind": self.kind,
            "label": self.label,
            "status": self.status.as_str(),
            "elapsed_ms": self.elapsed_ms,
            "output": self.output.text,
        });
        match &self.status {
            JobStatus::Running => {}
            JobStatus::Finished(value) => v["value"] = value.clone(),
            JobStatus::Failed(message) => v["error"] = Value::String(message.clone()),
            JobStatus::Killed(reason) => v["reason"] = Value::String(reason.as_str().to_owned()),
        }
        v
    }
}

/// Counts for tests and dashboards.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct JobStats {
    /// Jobs whose work has not ended.
    pub running: usize,
    /// Ended jobs still kept.
    pub finished: usize,
    /// Job threads alive (a job's thread ends after its cleanup).
    pub threads: usize,
    /// Of those, the threads of jobs ended as overdue (their runs had not stopped 5 s past
    /// their timeout), which still run.
    pub given_up: usize,
    /// Jobs started since the runtime was made.
    pub started: u64,
}

/// The background-job runtime of one registry (see the [module](self) docs).
#[derive(Clone)]
pub struct Jobs {
    inner: Arc<JobsInner>,
}

struct JobsInner {
    config: RwLock<JobsConfig>,
    table: Mutex<Table>,
    next: AtomicU64,
    shutdown: CancellationToken,
    accepting: AtomicBool,
    threads: AtomicUsize,
    threads_changed: Notify,
    /// Threads of jobs ended as overdue whose work still runs.
    given_up: AtomicUsize,
}

#[derive(Default)]
struct Table {
    jobs: IndexMap<String, Arc<Entry>>,
    /// Expired ids with their owner, newest last, bounded.
    expired: VecDeque<(String, Agent)>,
}

const MAX_TOMBSTONES: usize = 4096;

struct Entry {
    id: String,
    kind: String,
    label: String,
    owner: Agent,
    started: Instant,
    signal: CancellationToken,
    cancel: Box<dyn Fn() + Send + Sync>,
    cancelled: AtomicBool,
    read_output: Option<Box<dyn Fn(usize) -> OutputRead + Send + Sync>>,
    news: Arc<Notify>,
    state: Mutex<State>,
    /// Whether the job was handed out (its end is announced); read and written under
    /// `state`'s lock.
    published: AtomicBool,
    /// Whether the job was ended as overdue while its thread still runs; read and written
    /// under `state`'s lock.
    given_up: AtomicBool,
    /// The process groups its run's calls started, once its thread is armed (see
    /// [`JobSpec::on_overdue`]): killed when the job is given up on.
    processes: std::sync::OnceLock<crate::sandbox::RunProcesses>,
    /// Whether the job may be given up on (its spec set [`JobSpec::on_overdue`]): also
    /// [`ABANDON_AFTER`] after it was killed, when its work has not ended by then.
    may_give_up: bool,
}

enum State {
    Running { kill: Option<KillReason> },
    Ended { status: JobStatus, at: Instant },
}

impl Entry {
    fn is_running(&self) -> bool {
        matches!(*self.lock_state(), State::Running { .. })
    }

    fn lock_state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Ends the work early (first reason wins); does not wait.
    fn kill(&self, reason: KillReason) {
        {
            let mut state = self.lock_state();
            match &mut *state {
                State::Running { kill } => {
                    kill.get_or_insert(reason);
                }
                State::Ended { .. } => return,
            }
        }
        if !self.cancelled.swap(true, Ordering::SeqCst) {
            (self.cancel)();
        }
        self.signal.cancel();
    }

    /// Records the end and, when the job was handed out, tells its owner (before anyone
    /// can see the job ended, so that whoever sees the end also finds the notice).
    fn end(&self, status: JobStatus) {
        self.end_locked(&mut self.lock_state(), status);
        self.news.notify_waiters();
    }

    /// [`Entry::end`] with `state` locked; the caller tells the waiters.
    fn end_locked(&self, state: &mut State, status: JobStatus) {
        let notice = match &status {
            JobStatus::Finished(_) => {
                format!("Background job {} ({}) finished.", self.id, self.label)
            }
            JobStatus::Failed(m) => {
                format!("Background job {} ({}) failed: {m}", self.id, self.label)
            }
            JobStatus::Killed(reason) => format!(
                "Background job {} ({}) ended early: {}.",
                self.id,
                self.label,
                reason.as_str()
            ),
            JobStatus::Running => unreachable!("a job's end is never running"),
        };
        if self.published.load(Ordering::SeqCst) {
            // A gone owner refuses softly: nothing to tell.
            let _ = self.owner.inject(
                format!(
                    "{notice} Read it with job_output {{\"job_id\": \"{}\"}}.",
                    self.id
                ),
                "jobs",
            );
        }
        *state = State::Ended {
            status,
            at: Instant::now(),
        };
    }

    fn report(&self, output: OutputRead) -> JobReport {
        self.report_reading(|_| output)
    }

    /// The job's report with the output `read` takes, read after the status: a job
    /// reported ended wrote everything before it ended, so the report holds all of it (or
    /// says how many bytes are left), never a part read before the job's last lines.
    fn report_reading(&self, read: impl FnOnce(&Self) -> OutputRead) -> JobReport {
        let (status, elapsed) = match &*self.lock_state() {
            State::Running { .. } => (JobStatus::Running, self.started.elapsed()),
            State::Ended { status, at } => (status.clone(), *at - self.started),
        };
        let output = read(self);
        JobReport {
            job_id: self.id.clone(),
            kind: self.kind.clone(),
            label: self.label.clone(),
            status,
            elapsed_ms: elapsed.as_millis() as u64,
            output,
        }
    }
}

impl fmt::Debug for Jobs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Jobs")
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

impl Default for Jobs {
    fn default() -> Self {
        Jobs::new(JobsConfig::default())
    }
}

impl Jobs {
    /// A runtime with these bounds.
    pub fn new(config: JobsConfig) -> Jobs {
        Jobs {
            inner: Arc::new(JobsInner {
                config: RwLock::new(config),
                table: Mutex::new(Table::default()),
                next: AtomicU64::new(1),
                shutdown: CancellationToken::new(),
                accepting: AtomicBool::new(true),
                threads: AtomicUsize::new(0),
                threads_changed: Notify::new(),
                given_up: AtomicUsize::new(0),
            }),
        }
    }

    /// Replaces the bounds (running jobs keep running).
    pub fn configure(&self, config: JobsConfig) {
        *self
            .inner
            .config
            .write()
            .unwrap_or_else(PoisonError::into_inner) = config;
    }

    /// The bounds in force.
    pub fn config(&self) -> JobsConfig {
        self.inner
            .config
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn table(&self) -> std::sync::MutexGuard<'_, Table> {
        self.inner
            .table
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Starts a job (see the [module](self) docs).
    ///
    /// # Errors
    /// [`JobError::OwnerGone`], [`JobError::ShuttingDown`], [`JobError::TooManyForOwner`],
    /// [`JobError::TooMany`] before anything runs; [`JobError::Thread`] when the job's
    /// thread cannot start (the producer is cancelled and dropped).
    pub fn start(&self, spec: JobSpec) -> Result<JobHandle, JobError> {
        let config = self.config();
        let id;
        let entry;
        {
            let mut table = self.table();
            if spec.owner.is_disposed() {
                return Err(JobError::OwnerGone);
            }
            if !self.inner.accepting.load(Ordering::SeqCst) {
                return Err(JobError::ShuttingDown);
            }
            sweep(&mut table, &config);
            // A held job is its caller's foreground run: it takes a slot only once handed
            // out (`publish`), so foreground runs are never refused for want of one.
            if !spec.held {
                room(&table, &config, &spec.owner)?;
            }
            let n = self.inner.next.fetch_add(1, Ordering::Relaxed);
            id = format!("{}-{n}", spec.kind);
            let context = JobContext {
                id: id.clone(),
                signal: self.inner.shutdown.child_token(),
                news: Arc::new(Notify::new()),
                max_unread_output: config.max_unread_output,
            };
            let producer = (spec.run)(&context);
            let e = Arc::new(Entry {
                id: id.clone(),
                kind: spec.kind,
                label: spec.label,
                owner: spec.owner,
                started: Instant::now(),
                signal: context.signal,
                cancel: producer.cancel,
                cancelled: AtomicBool::new(false),
                read_output: producer.read_output,
                news: context.news,
                state: Mutex::new(State::Running { kill: None }),
                published: AtomicBool::new(!spec.held),
                given_up: AtomicBool::new(false),
                processes: std::sync::OnceLock::new(),
                may_give_up: spec.overdue.is_some(),
            });
            table.jobs.insert(id.clone(), e.clone());
            entry = (e, producer.done);
        }
        let (e, done) = entry;
        let overdue = spec.overdue.map(|end| {
            let (jobs, job) = (Arc::downgrade(&self.inner), Arc::downgrade(&e));
            let arm = crate::run_code::OverdueArm::new(move |timeout| {
                if let (Some(inner), Some(job)) = (jobs.upgrade(), job.upgrade()) {
                    Jobs { inner }.give_up(&job, end(timeout));
                }
            });
            let _ = e.processes.set(arm.processes());
            arm
        });
        self.inner.threads.fetch_add(1, Ordering::SeqCst);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build();
        let thread = runtime.and_then(|runtime| {
            // Weak: a running job does not keep its runtime (and registry) alive.
            let jobs = Arc::downgrade(&self.inner);
            let job = e.clone();
            std::thread::Builder::new()
                .name(format!("codemode-job-{id}"))
                .stack_size(spec.stack.max(256 << 10))
                .spawn(move || {
                    let armed = overdue.map(crate::run_code::OverdueArm::arm);
                    let status = runtime.block_on(supervise(&job, done));
                    drop(armed);
                    runtime.shutdown_background();
                    match jobs.upgrade() {
                        Some(inner) => Jobs { inner }.finish(&job, status),
                        None => job.end(status),
                    }
                })
        });
        if let Err(error) = thread {
            self.inner.threads.fetch_sub(1, Ordering::SeqCst);
            e.kill(KillReason::Shutdown);
            self.table().jobs.shift_remove(&id);
            return Err(JobError::Thread(error.to_string()));
        }
        Ok(JobHandle { job_id: id })
    }

    /// Records a job's end, tells its owner, and lets its thread go.
    fn finish(&self, job: &Entry, status: JobStatus) {
        let config = self.config();
        let status = match status {
            JobStatus::Finished(value) => {
                let bytes = crate::value::json_size(&value);
                if bytes > config.max_kept_value {
                    JobStatus::Failed(format!(
                        "the job finished, but its value ({bytes} bytes of JSON) is larger than the {} bytes a finished job keeps",
                        config.max_kept_value
                    ))
                } else {
                    JobStatus::Finished(value)
                }
            }
            other => other,
        };
        {
            let mut state = job.lock_state();
            if job.given_up.swap(false, Ordering::SeqCst) {
                // Ended as overdue: that end stands.
                self.inner.given_up.fetch_sub(1, Ordering::SeqCst);
            } else {
                job.end_locked(&mut state, status);
            }
        }
        job.news.notify_waiters();
        self.inner.threads.fetch_sub(1, Ordering::SeqCst);
        self.inner.threads_changed.notify_waiters();
    }

    /// Ends `job`, whose run is overdue, as `end` says while its thread goes on (see
    /// [`JobSpec::on_overdue`]); nothing when it ended, or when `max_running` threads of
    /// such jobs still run.
    fn give_up(&self, job: &Entry, end: JobEnd) {
        let max = self.config().max_running;
        {
            let mut state = job.lock_state();
            let State::Running { kill } = &*state else {
                return;
            };
            if self.inner.given_up.load(Ordering::SeqCst) >= max {
                return;
            }
            let status = match (*kill, end) {
                (Some(reason), _) => JobStatus::Killed(reason),
                (None, JobEnd::Finished(value)) => JobStatus::Finished(value),
                (None, JobEnd::Failed(message)) => JobStatus::Failed(message),
            };
            self.inner.given_up.fetch_add(1, Ordering::SeqCst);
            job.given_up.store(true, Ordering::SeqCst);
            job.end_locked(&mut state, status);
        }
        // Its thread goes on; what its run's calls started ends now.
        if let Some(processes) = job.processes.get() {
            processes.kill();
        }
        job.news.notify_waiters();
    }

    /// The job `id` of `owner`.
    fn lookup(&self, id: &str, owner: &Agent) -> Result<Arc<Entry>, JobError> {
        let config = self.config();
        let mut table = self.table();
        sweep(&mut table, &config);
        if let Some(e) = table.jobs.get(id)
            && e.owner.same_as(owner)
        {
            return Ok(e.clone());
        }
        if table
            .expired
            .iter()
            .any(|(x, o)| x == id && o.same_as(owner))
        {
            return Err(JobError::Expired {
                id: id.to_owned(),
                kept: duration_text(config.keep_finished),
            });
        }
        Err(JobError::Unknown(id.to_owned()))
    }

    /// Reads the news of `owner`'s job `id`: its status and up to `max_bytes` of output not
    /// read before. With `wait`, waits up to that long (or until `signal` fires) for news
    /// when there is none yet.
    ///
    /// # Errors
    /// [`JobError::Unknown`] (also for another owner's job) or [`JobError::Expired`].
    pub async fn output(
        &self,
        id: &str,
        owner: &Agent,
        max_bytes: usize,
        wait: Duration,
        signal: &CancellationToken,
    ) -> Result<JobReport, JobError> {
        let job = self.lookup(id, owner)?;
        let read = |job: &Entry| match &job.read_output {
            Some(read) => read(max_bytes),
            None => OutputRead::default(),
        };
        let notified = job.news.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        let first = job.report_reading(read);
        if !first.output.is_empty() || first.status != JobStatus::Running || wait.is_zero() {
            return Ok(first);
        }
        tokio::select! {
            () = notified => {}
            () = tokio::time::sleep(wait) => {}
            () = signal.cancelled() => {}
        }
        Ok(job.report_reading(read))
    }

    /// Waits up to `wait` (or until `signal` fires) for the end of job `id`.
    pub(crate) async fn wait_for_end(
        &self,
        id: &str,
        wait: Duration,
        signal: &CancellationToken,
    ) -> Waited {
        let Some(job) = self.table().jobs.get(id).cloned() else {
            return Waited::Cancelled;
        };
        tokio::select! {
            () = wait_ended(&job) => {}
            () = tokio::time::sleep(wait) => {}
            () = signal.cancelled() => {}
        }
        match &*job.lock_state() {
            State::Ended { status, .. } => Waited::Ended(status.clone()),
            State::Running { .. } if signal.is_cancelled() => Waited::Cancelled,
            State::Running { .. } => Waited::Running,
        }
    }

    /// Hands a held job out: from now on its end is announced and it counts toward the
    /// bounds. `Ok(Some(status))` when it has already ended (nothing is announced; take its
    /// outcome instead); an error when the bounds leave no room (it stays held).
    pub(crate) fn publish(&self, id: &str) -> Result<Option<JobStatus>, JobError> {
        let config = self.config();
        let table = self.table();
        let Some(job) = table.jobs.get(id).cloned() else {
            return Ok(None);
        };
        // Handed out, it counts: the bounds are checked now.
        room(&table, &config, &job.owner)?;
        drop(table);
        let state = job.lock_state();
        match &*state {
            State::Ended { status, .. } => Ok(Some(status.clone())),
            State::Running { .. } => {
                job.published.store(true, Ordering::SeqCst);
                Ok(None)
            }
        }
    }

    /// Ends a held job (if it runs) and waits for its cleanup, at most [`ABANDON_AFTER`]
    /// for one that may be given up on (see [`Jobs::kill`]).
    pub(crate) async fn end_held(&self, id: &str) -> Option<JobStatus> {
        let job = self.table().jobs.get(id).cloned()?;
        job.kill(KillReason::Killed);
        if job.may_give_up {
            let _ = tokio::time::timeout(ABANDON_AFTER, wait_ended(&job)).await;
            self.give_up_killed(&job, ABANDON_AFTER);
        }
        wait_ended(&job).await;
        match &*job.lock_state() {
            State::Ended { status, .. } => Some(status.clone()),
            State::Running { .. } => None,
        }
    }

    /// Drops a held job that ended, leaving no trace (its outcome was taken).
    pub(crate) fn forget(&self, id: &str) {
        self.table().jobs.shift_remove(id);
    }

    /// Reads up to `max_bytes` of job `id`'s output (the runtime's own read: no owner).
    pub(crate) fn read_now(&self, id: &str, max_bytes: usize) -> OutputRead {
        let job = self.table().jobs.get(id).cloned();
        match job.as_ref().and_then(|j| j.read_output.as_ref()) {
            Some(read) => read(max_bytes),
            None => OutputRead::default(),
        }
    }

    /// `owner`'s jobs, oldest first, without reading their output.
    pub fn list(&self, owner: &Agent) -> Vec<JobReport> {
        let config = self.config();
        let mut table = self.table();
        sweep(&mut table, &config);
        table
            .jobs
            .values()
            .filter(|e| e.owner.same_as(owner))
            .map(|e| e.report(OutputRead::default()))
            .collect()
    }

    /// Ends `owner`'s job `id` and waits (up to `wait`) for its cleanup; a job already
    /// ended is left as it is. Returns its report.
    ///
    /// # Errors
    /// [`JobError::Unknown`] or [`JobError::Expired`].
    pub async fn kill(
        &self,
        id: &str,
        owner: &Agent,
        wait: Duration,
    ) -> Result<JobReport, JobError> {
        let job = self.lookup(id, owner)?;
        let notified = job.news.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        job.kill(KillReason::Killed);
        if job.is_running() {
            tokio::select! {
                () = wait_ended(&job) => {}
                () = tokio::time::sleep(wait) => {}
            }
        }
        self.give_up_killed(&job, wait);
        Ok(job.report(OutputRead::default()))
    }

    /// Gives up on a killed job whose work has not ended `waited` after the kill, when
    /// that is at least [`ABANDON_AFTER`] and the job may be given up on: a run in a loop
    /// over a slow built-in ends only at its engine's next check. It ends as killed while
    /// its thread goes on (see [`JobSpec::on_overdue`]).
    fn give_up_killed(&self, job: &Entry, waited: Duration) {
        if job.may_give_up && waited >= ABANDON_AFTER && job.is_running() {
            // Killed: the status is the kill's, whatever `end` says.
            self.give_up(job, JobEnd::Failed(String::new()));
        }
    }

    /// Ends the running jobs of `owner`, whose conversation ended (as disposing it does,
    /// see [`Agent::dispose`]), and gives up [`ABANDON_AFTER`] later on those whose work
    /// still runs and may be given up on (a run stuck in its engine, which cannot see the
    /// kill): they end as killed and the processes their runs' calls started are killed
    /// (see [`JobSpec::on_overdue`]). Returns at once; the wait is on a task of the current
    /// tokio runtime, else on a thread of its own.
    pub fn end_owned(&self, owner: &Agent) {
        let running: Vec<Arc<Entry>> = self
            .table()
            .jobs
            .values()
            .filter(|job| job.owner.same_as(owner) && job.is_running())
            .cloned()
            .collect();
        for job in &running {
            job.kill(KillReason::OwnerGone);
        }
        let stuck: Vec<Arc<Entry>> = running.into_iter().filter(|job| job.may_give_up).collect();
        if stuck.is_empty() {
            return;
        }
        let jobs = self.clone();
        let give_up = move || {
            for job in &stuck {
                jobs.give_up_killed(job, ABANDON_AFTER);
            }
        };
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move {
                    tokio::time::sleep(ABANDON_AFTER).await;
                    give_up();
                });
            }
            Err(_) => {
                let _ = std::thread::Builder::new()
                    .name("codemode-jobs-owner-gone".into())
                    .spawn(move || {
                        std::thread::sleep(ABANDON_AFTER);
                        give_up();
                    });
            }
        }
    }

    /// Stops accepting jobs, ends every running job and waits until each one's cleanup is
    /// over and its thread gone, but for the threads of jobs ended as overdue, whose runs
    /// stop only at their engine's next check: [`ABANDON_AFTER`] after the kill, a job that
    /// may be given up on and still runs is (see [`Jobs::kill`]). Idempotent.
    pub async fn shutdown(&self) {
        self.inner.accepting.store(false, Ordering::SeqCst);
        let running: Vec<Arc<Entry>> = self.table().jobs.values().cloned().collect();
        for job in &running {
            job.kill(KillReason::Shutdown);
        }
        self.inner.shutdown.cancel();
        let gave_up = tokio::time::sleep(ABANDON_AFTER);
        tokio::pin!(gave_up);
        let mut waiting = true;
        loop {
            let changed = self.inner.threads_changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let given_up = self.inner.given_up.load(Ordering::SeqCst);
            if self.inner.threads.load(Ordering::SeqCst) <= given_up {
                return;
            }
            if !waiting {
                changed.await;
                continue;
            }
            tokio::select! {
                () = changed => {}
                () = &mut gave_up => {
                    waiting = false;
                    for job in &running {
                        self.give_up_killed(job, ABANDON_AFTER);
                    }
                }
            }
        }
    }

    /// Whether the runtime still accepts jobs.
    pub fn is_accepting(&self) -> bool {
        self.inner.accepting.load(Ordering::SeqCst)
    }

    /// Counts of running and kept jobs and live job threads.
    pub fn stats(&self) -> JobStats {
        let table = self.table();
        let running = table.jobs.values().filter(|e| e.is_running()).count();
        JobStats {
            running,
            finished: table.jobs.len() - running,
            threads: self.inner.threads.load(Ordering::SeqCst),
            given_up: self.inner.given_up.load(Ordering::SeqCst),
            started: self.inner.next.load(Ordering::Relaxed) - 1,
        }
    }
}

/// `10 min`, `90 s`, `500 ms`.
fn duration_text(d: Duration) -> String {
    let ms = d.as_millis();
    if ms.is_multiple_of(60_000) && ms > 0 {
        format!("{} min", ms / 60_000)
    } else if ms.is_multiple_of(1000) && ms > 0 {
        format!("{} s", ms / 1000)
    } else {
        format!("{ms} ms")
    }
}

async fn wait_ended(job: &Entry) {
    loop {
        let notified = job.news.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        if !job.is_running() {
            return;
        }
        notified.await;
    }
}

/// Drives a job to its end on its own thread: its `done`, or a kill (by id, by the
/// owner's disposal, by shutdown) followed by `done` after the producer's cancel.
async fn supervise(job: &Entry, done: BoxFuture<'static, JobEnd>) -> JobStatus {
    let mut done = done;
    let end = tokio::select! {
        end = &mut done => Some(end),
        () = job.signal.cancelled() => None,
        () = job.owner.gone().cancelled() => {
            job.kill(KillReason::OwnerGone);
            None
        }
    };
    let end = match end {
        Some(end) => end,
        None => {
            // The signal fired: make sure the producer heard, then wait for its cleanup.
            job.kill(KillReason::Shutdown);
            done.await
        }
    };
    let kill = match &*job.lock_state() {
        State::Running { kill } => *kill,
        State::Ended { .. } => None,
    };
    match (kill, end) {
        (Some(reason), _) => JobStatus::Killed(reason),
        (None, JobEnd::Finished(value)) => JobStatus::Finished(value),
        (None, JobEnd::Failed(message)) => JobStatus::Failed(message),
    }
}

/// Whether one more job of `owner` may run: the handed-out running jobs are under both
/// bounds.
fn room(table: &Table, config: &JobsConfig, owner: &Agent) -> Result<(), JobError> {
    let mut all = 0;
    let mut owners = 0;
    for e in table.jobs.values() {
        // A job ended as overdue still holds its thread.
        let busy = e.is_running() || e.given_up.load(Ordering::SeqCst);
        if busy && e.published.load(Ordering::SeqCst) {
            all += 1;
            owners += usize::from(e.owner.same_as(owner));
        }
    }
    if all >= config.max_running {
        return Err(JobError::TooMany {
            limit: config.max_running,
        });
    }
    if owners >= config.max_running_per_owner {
        return Err(JobError::TooManyForOwner {
            limit: config.max_running_per_owner,
        });
    }
    Ok(())
}

/// Drops ended jobs past their keeping time (and the oldest past the count), leaving a
/// tombstone so that their owner hears "expired", not "unknown".
fn sweep(table: &mut Table, config: &JobsConfig) {
    let now = Instant::now();
    let mut ended: Vec<(String, Instant)> = Vec::new();
    for e in table.jobs.values() {
        if let State::Ended { at, .. } = &*e.lock_state() {
            ended.push((e.id.clone(), *at));
        }
    }
    let over = ended.len().saturating_sub(config.max_finished);
    ended.sort_by_key(|(_, at)| *at);
    for (i, (id, at)) in ended.into_iter().enumerate() {
        if (i < over || now.duration_since(at) >= config.keep_finished)
            && let Some(e) = table.jobs.shift_remove(&id)
        {
            table.expired.push_back((id, e.owner.clone()));
        }
    }
    while table.expired.len() > MAX_TOMBSTONES {
        table.expired.pop_front();
    }
}

impl Drop for JobsInner {
    fn drop(&mut self) {
        // The registry is gone: nothing can read the jobs any more; end them.
        self.shutdown.cancel();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A job whose work never ends (its thread waits for ever, parked).
    fn stuck(owner: &Agent) -> JobSpec {
        JobSpec::new("stuck", "stuck", owner.clone(), 256 << 10, |_| Producer {
            cancel: Box::new(|| {}),
            done: Box::pin(std::future::pending()),
            read_output: None,
        })
        .on_overdue(|_| JobEnd::Failed("overdue".into()))
    }

    #[test]
    fn a_job_given_up_on_keeps_counting_and_at_most_max_running_are_given_up() {
        let jobs = Jobs::new(JobsConfig::default().max_running(8, 1));
        let owner = Agent::new();
        let entry = |id: &str| jobs.table().jobs.get(id).cloned().unwrap();
        let a = jobs.start(stuck(&owner)).unwrap().job_id;
        jobs.give_up(&entry(&a), JobEnd::Failed("overdue".into()));
        assert!(matches!(
            &*entry(&a).lock_state(),
            State::Ended { status: JobStatus::Failed(m), .. } if m == "overdue"
        ));
        assert_eq!(jobs.stats().given_up, 1);
        // Its thread still runs: it counts toward `max_running` (1).
        assert!(matches!(
            jobs.start(stuck(&owner)),
            Err(JobError::TooMany { limit: 1 })
        ));
        // A held job starts (it takes no slot), but is not given up on past the bound.
        let b = jobs.start(stuck(&owner).held()).unwrap().job_id;
        jobs.give_up(&entry(&b), JobEnd::Failed("overdue".into()));
        assert!(entry(&b).is_running());
        assert_eq!(jobs.stats().given_up, 1);
    }

    #[test]
    fn a_killed_job_that_may_be_given_up_on_is_once_the_grace_passed() {
        let jobs = Jobs::new(JobsConfig::default());
        let owner = Agent::new();
        let entry = |id: &str| jobs.table().jobs.get(id).cloned().unwrap();
        let a = jobs.start(stuck(&owner)).unwrap().job_id;
        entry(&a).kill(KillReason::Killed);
        jobs.give_up_killed(&entry(&a), Duration::from_secs(1));
        assert!(entry(&a).is_running(), "not before the grace");
        jobs.give_up_killed(&entry(&a), ABANDON_AFTER);
        assert!(matches!(
            &*entry(&a).lock_state(),
            State::Ended {
                status: JobStatus::Killed(KillReason::Killed),
                ..
            }
        ));
        // A job without `on_overdue` is never given up on.
        let mut plain = stuck(&owner);
        plain.overdue = None;
        let b = jobs.start(plain).unwrap().job_id;
        entry(&b).kill(KillReason::Killed);
        jobs.give_up_killed(&entry(&b), ABANDON_AFTER);
        assert!(entry(&b).is_running());
    }
}
