//! The sandbox's memory limit: an allocator for QuickJS that counts every byte and refuses
//! past the limit, and remembers that it refused.
//!
//! Why not `JS_SetMemoryLimit`: JavaScript can catch QuickJS's out-of-memory error and carry
//! on, so the host could not tell afterwards that the limit was hit. Counting here, the
//! refusal raises a flag the interrupt handler and the driver read, which makes running out
//! of memory fatal for the run even when the program catches it (see "Limits" in the README).
//!
//! Blocks come from the C allocator, as QuickJS's own allocator takes them, and are counted
//! by their usable size (`malloc_usable_size`, `malloc_size` on macOS): no header, so the
//! engine's many small blocks cost what they cost without a limit.
//!
//! This module, the bytecode loader and the engine checks of inspect (`sandbox/prelude.rs`),
//! `killpg` in `child.rs`, the stack bounds
//! in `sandbox/stack.rs`, the job runner in `sandbox/engine.rs` (which keeps what a
//! job threw), the settled promise of a call that finished at once
//! (`sandbox/bridge.rs`) and the native array guards (`sandbox/guards.rs`) are the only
//! `unsafe` code; here, the
//! [`rquickjs::allocator::Allocator`] trait hands out raw pointers, and
//! [`return_free_memory`] calls the C allocator's `malloc_trim`. Each block states why it
//! is sound.
#![expect(
    unsafe_code,
    reason = "implementing rquickjs's Allocator trait requires raw allocation"
)]

use std::ffi::c_void;
use std::sync::Arc;

use rquickjs::allocator::Allocator;

use super::flags::RunFlags;

/// The usable size of a block from the C allocator.
///
/// # Safety
/// `ptr` must be a live block from `malloc`, `calloc` or `realloc`.
unsafe fn usable(ptr: *mut c_void) -> usize {
    #[cfg(target_vendor = "apple")]
    // SAFETY: guaranteed by the caller.
    unsafe {
        libc::malloc_size(ptr)
    }
    #[cfg(not(target_vendor = "apple"))]
    // SAFETY: guaranteed by the caller.
    unsafe {
        libc::malloc_usable_size(ptr)
    }
}

/// Blocks taken between two looks at the run's cancellation signal.
const SIGNAL_POLL: u32 = 4096;

/// Why the allocator refused a block.
enum Refused {
    /// Past the memory limit: the run stops with an out-of-memory.
    Limit,
    /// The run was stopped (see [`RunFlags::refuses_memory`]).
    Stopped,
}

/// Counts the bytes QuickJS holds and refuses allocations past `limit`, and all of them
/// once its run is stopped.
pub(crate) struct LimitedAllocator {
    limit: usize,
    used: usize,
    /// Blocks handed out, for polling the run's signal every [`SIGNAL_POLL`] blocks.
    handed: u32,
    /// The most `used` has been, also kept in the flags for the run's report.
    peak: usize,
    flags: Arc<RunFlags>,
}

impl LimitedAllocator {
    pub(crate) fn new(limit: usize, flags: Arc<RunFlags>) -> Self {
        LimitedAllocator {
            limit,
            used: 0,
            handed: 0,
            peak: 0,
            flags,
        }
    }

    fn refuse(&self) -> *mut u8 {
        self.flags.out_of_memory();
        std::ptr::null_mut()
    }

    /// Whether `more` bytes may be taken: within the limit, and the run not stopped (see
    /// [`RunFlags::refuses_memory`]; a refusal for a stop is not an out-of-memory).
    fn admit(&mut self, more: usize) -> Result<(), Refused> {
        self.handed = self.handed.wrapping_add(1);
        if self.handed.is_multiple_of(SIGNAL_POLL) {
            // A cancelled run's program may be in a loop that spends its time in
            // built-ins, which rarely asks the interrupt handler: the stop comes from here.
            self.flags.poll_signal();
        }
        if self.flags.refuses_memory() {
            return Err(Refused::Stopped);
        }
        if self.used.checked_add(more).is_some_and(|t| t <= self.limit) {
            Ok(())
        } else {
            Err(Refused::Limit)
        }
    }

    fn refused(&self, why: Refused) -> *mut u8 {
        match why {
            Refused::Limit => self.refuse(),
            Refused::Stopped => std::ptr::null_mut(),
        }
    }

    /// Counts `bytes` more held, and notes a new high (a plain store, only when it rises).
    fn grow(&mut self, bytes: usize) {
        self.used += bytes;
        if self.used > self.peak {
            self.peak = self.used;
            self.flags.memory_high(self.used);
        }
    }
}

// SAFETY: every pointer handed out comes from the C allocator (`malloc`, `calloc`,
// `realloc`) and is only ever passed back to it (`free`, `realloc`) or to
// `malloc_usable_size`, which is what the trait's contract asks of `dealloc`, `realloc` and
// `usable_size`.
unsafe impl Allocator for LimitedAllocator {
    fn alloc(&mut self, size: usize) -> *mut u8 {
        if let Err(why) = self.admit(size) {
            return self.refused(why);
        }
        // SAFETY: `malloc` accepts any size; a null result is handled.
        let ptr = unsafe { libc::malloc(size.max(1)) };
        if ptr.is_null() {
            return self.refuse();
        }
        // SAFETY: `ptr` is a live block from `malloc`.
        self.grow(unsafe { usable(ptr) });
        ptr.cast()
    }

    fn calloc(&mut self, count: usize, size: usize) -> *mut u8 {
        let Some(total) = count.checked_mul(size) else {
            return self.refuse();
        };
        if let Err(why) = self.admit(total) {
            return self.refused(why);
        }
        // SAFETY: `calloc` accepts any sizes; a null result is handled.
        let ptr = unsafe { libc::calloc(count.max(1), size.max(1)) };
        if ptr.is_null() {
            return self.refuse();
        }
        // SAFETY: `ptr` is a live block from `calloc`.
        self.grow(unsafe { usable(ptr) });
        ptr.cast()
    }

    unsafe fn dealloc(&mut self, ptr: *mut u8) {
        if ptr.is_null() {
            return;
        }
        // SAFETY: the trait's contract: `ptr` came from this allocator, so from the C
        // allocator, and is live.
        unsafe {
            self.used = self.used.saturating_sub(usable(ptr.cast()));
            libc::free(ptr.cast());
        }
    }

    unsafe fn realloc(&mut self, ptr: *mut u8, new_size: usize) -> *mut u8 {
        if ptr.is_null() {
            return self.alloc(new_size);
        }
        // SAFETY: the trait's contract: `ptr` came from this allocator and is live.
        unsafe {
            let old = usable(ptr.cast());
            if new_size > old
                && let Err(why) = self.admit(new_size - old)
            {
                return self.refused(why);
            }
            let moved = libc::realloc(ptr.cast(), new_size.max(1));
            if moved.is_null() {
                return self.refuse();
            }
            self.used = self.used.saturating_sub(old);
            self.grow(usable(moved));
            moved.cast()
        }
    }

    unsafe fn usable_size(ptr: *mut u8) -> usize {
        if ptr.is_null() {
            return 0;
        }
        // SAFETY: the trait's contract: `ptr` came from this allocator and is live.
        unsafe { usable(ptr.cast()) }
    }
}

/// Gives the C allocator's free pages back to the system (glibc's `malloc_trim`, in every
/// arena; elsewhere nothing). Called after a large tool result was converted: its JSON
/// tree, freed as it converted, would otherwise stay resident for the rest of the process.
pub(crate) fn return_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `malloc_trim` takes no pointer and has no precondition; it only releases
    // pages of free blocks.
    unsafe {
        libc::malloc_trim(0);
    }
}
