//! Warm engines: runtimes with their context and prelude built ahead, off the call's path,
//! each used for exactly one run.
//!
//! Building an engine (runtime, context, prelude) is most of a cold `run_code` of a short
//! program. A pool keeps up to `size` of them ready. A run takes one if it was built for
//! the same tools and memory limit (the prelude binds the tool functions and reads the
//! limit), otherwise it starts its own as without a pool, and the pool rebuilds for the new
//! set. Refill: one builder thread per pool builds engines one at a time whenever fewer than
//! `size` are idle, right after a run takes one.
//!
//! Isolation is the same as without a pool: an engine serves one run and is then freed; no
//! global, prototype change or timer of one run can reach another.
//!
//! ```text
//!   builder thread: start engine ─> load prelude ─> park (waits for a program) ─> idle list
//!   run:            take (same tools and memory?) ─┬─ yes: arm deadline and signal, run it
//!                                                  └─ no:  start one here (cold), and the
//!                                                          builder rebuilds for these tools
//! ```

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use super::driver::{EngineKey, Parked};
use super::reaper::Teardown;
use super::stack;

/// Engine stack while a builder loads the prelude (the run sets its own before it starts).
const BUILD_STACK: usize = 1 << 20;

/// A pool of warm engines for `run_code` (see [`crate::run_code::RunCodeConfig::engine_pool`]).
///
/// Cloning shares the pool; when the last clone is dropped, its builder thread stops and
/// the idle engines are freed.
///
/// Cost: each idle engine holds what a fresh engine with the prelude holds, about 270 KiB
/// of memory on x86-64 Linux (measured by `cargo bench --bench sandbox`, "warm engine
/// pool"), counted against no run's memory limit until a run takes it.
#[derive(Clone)]
pub struct EnginePool {
    handle: Arc<Handle>,
}

impl std::fmt::Debug for EnginePool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EnginePool")
            .field("size", &self.handle.shared.size)
            .field("stats", &self.stats())
            .finish()
    }
}

/// How a pool has served runs so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PoolStats {
    /// Engines built by the builder thread.
    pub built: u64,
    /// Runs that took a warm engine.
    pub warm: u64,
    /// Runs that found none for their tools and memory limit and started their own.
    pub cold: u64,
    /// Engines freed without a run (built for a tool set or memory limit no longer asked
    /// for).
    pub discarded: u64,
    /// Engines ready now.
    pub idle: usize,
}

/// Dropped with the last clone of the pool: stops the builder.
struct Handle {
    shared: Arc<Shared>,
}

impl Drop for Handle {
    fn drop(&mut self) {
        let idle = {
            let mut st = self.shared.lock();
            st.stopped = true;
            std::mem::take(&mut st.idle)
        };
        self.shared.wake.notify_all();
        drop(idle);
    }
}

struct Shared {
    size: usize,
    state: Mutex<State>,
    wake: Condvar,
    built: AtomicU64,
    warm: AtomicU64,
    cold: AtomicU64,
    discarded: AtomicU64,
}

struct State {
    /// What the engines are built for: the last run's tools and memory limit.
    key: Option<EngineKey>,
    idle: Vec<Parked>,
    builder_started: bool,
    /// The builder sleeps until woken: only then does a run pay for waking it.
    builder_asleep: bool,
    stopped: bool,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The builder's sleep until a run or the pool's end wakes it.
    fn sleep<'a>(&self, mut st: MutexGuard<'a, State>) -> MutexGuard<'a, State> {
        st.builder_asleep = true;
        st = self.wake.wait(st).unwrap_or_else(PoisonError::into_inner);
        st.builder_asleep = false;
        st
    }
}

impl EnginePool {
    /// A pool that keeps up to `size` engines ready (0 keeps none: every run starts its own).
    ///
    /// Nothing is built until the first run says which tools and memory limit to build for:
    /// that run starts its own engine, and later runs with the same tools take warm ones.
    pub fn new(size: usize) -> EnginePool {
        EnginePool {
            handle: Arc::new(Handle {
                shared: Arc::new(Shared {
                    size,
                    state: Mutex::new(State {
                        key: None,
                        idle: Vec::new(),
                        builder_started: false,
                        builder_asleep: false,
                        stopped: false,
                    }),
                    wake: Condvar::new(),
                    built: AtomicU64::new(0),
                    warm: AtomicU64::new(0),
                    cold: AtomicU64::new(0),
                    discarded: AtomicU64::new(0),
                }),
            }),
        }
    }

    /// How many engines the pool keeps ready.
    pub fn size(&self) -> usize {
        self.handle.shared.size
    }

    /// How the pool has served runs so far.
    pub fn stats(&self) -> PoolStats {
        let s = &self.handle.shared;
        PoolStats {
            built: s.built.load(Ordering::Relaxed),
            warm: s.warm.load(Ordering::Relaxed),
            cold: s.cold.load(Ordering::Relaxed),
            discarded: s.discarded.load(Ordering::Relaxed),
            idle: s.lock().idle.len(),
        }
    }

    /// A warm engine built for `key`, if one is idle; otherwise `None`, and the builder
    /// builds for `key` from now on.
    pub(super) fn take(&self, key: &EngineKey) -> Option<Parked> {
        let shared = &self.handle.shared;
        if shared.size == 0 {
            return None;
        }
        let (taken, stale, start_builder, asleep) = {
            let mut st = shared.lock();
            let stale = if st.key.as_ref() == Some(key) {
                Vec::new()
            } else {
                st.key = Some(key.clone());
                std::mem::take(&mut st.idle)
            };
            let taken = st.idle.pop();
            let start_builder = !std::mem::replace(&mut st.builder_started, true);
            (taken, stale, start_builder, st.builder_asleep)
        };
        shared
            .discarded
            .fetch_add(stale.len() as u64, Ordering::Relaxed);
        drop(stale);
        if start_builder && !self.spawn_builder() {
            shared.lock().builder_started = false;
        }
        // A builder at work sees the idle list when it is done.
        if asleep {
            shared.wake.notify_all();
        }
        let counter = if taken.is_some() {
            &shared.warm
        } else {
            &shared.cold
        };
        counter.fetch_add(1, Ordering::Relaxed);
        taken
    }

    /// Starts the builder thread; false when the system refused a thread (runs then start
    /// their own engines).
    fn spawn_builder(&self) -> bool {
        let shared = self.handle.shared.clone();
        std::thread::Builder::new()
            .name("codemode-pool".to_owned())
            .stack_size(BUILD_STACK + stack::HOST_MARGIN + (4 << 20))
            .spawn(move || build_loop(&shared))
            .is_ok()
    }
}

/// The builder thread: keeps `size` engines idle for the current key until the pool is
/// dropped.
fn build_loop(shared: &Shared) {
    loop {
        let key = {
            let mut st = shared.lock();
            loop {
                if st.stopped {
                    return;
                }
                match &st.key {
                    Some(key) if st.idle.len() < shared.size => break key.clone(),
                    _ => st = shared.sleep(st),
                }
            }
        };
        let built = futures::executor::block_on(Parked::build(key, BUILD_STACK, Teardown::Reaper));
        let Ok(parked) = built else {
            // An engine that cannot start here will not start for a run either; the runs
            // report why. Wait for the next change rather than retry in a loop.
            drop(shared.sleep(shared.lock()));
            continue;
        };
        shared.built.fetch_add(1, Ordering::Relaxed);
        let mut st = shared.lock();
        if !st.stopped && st.key.as_ref() == Some(&parked.key) {
            st.idle.push(parked);
        } else {
            drop(st);
            shared.discarded.fetch_add(1, Ordering::Relaxed);
            drop(parked);
        }
    }
}
