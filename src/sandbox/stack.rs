//! The engine's stack limit, kept inside the stack the thread really has.
//!
//! QuickJS stops a program whose stack passes the limit with a catchable `RangeError`
//! ("Maximum call stack size exceeded"), measured from where the host entered the engine.
//! A limit larger than what the thread has left would let a deep recursion run off the end
//! of the host's stack and crash the process, so the limit a run gets is the smaller of
//! [`Limits::stack`](super::Limits::stack) and the thread's remaining stack less
//! [`HOST_MARGIN`].
//!
//! rquickjs (with its `parallel` feature) moves the engine's stack top to the caller's frame
//! at every call from Rust into JavaScript, and QuickJS measures its limit from that top. A
//! host function called at the bottom of a deep recursion (`tools.x` resolving its promise,
//! a conversion calling `toJSON`) would so give the engine a whole new limit's worth of
//! stack below the recursion, and the next recursion would run off the end of the thread's
//! stack. [`StackFloor`] keeps the limit at one address for the whole run instead.
#![expect(
    unsafe_code,
    reason = "pthread_getattr_np is how a thread learns where its stack ends; QuickJS's stack \
              top and size are set through its C API"
)]

use std::cell::Cell;
use std::rc::Rc;

use rquickjs::{Ctx, Exception, qjs};

/// Stack left for the host's own frames below the engine's limit: the frames between where
/// the bound is measured and where the engine is entered, and native work the engine does
/// past its last check (conversions, regular expressions, the allocator).
pub(crate) const HOST_MARGIN: usize = 512 << 10;

/// The largest limit an engine runs with: rquickjs hands QuickJS 0 ("no limit") for a
/// larger one, which would let a recursion run off the end of the thread's stack.
pub(crate) const MAX_ENGINE_STACK: usize = 16 << 20;

/// Stack a conversion between JavaScript and JSON keeps in reserve: it stops with an
/// error, not a crash, when a deeply nested value meets a stack this close to its end
/// (it runs inside the program's own calls, below the engine's limit).
pub(crate) const CONVERT_RESERVE: usize = 128 << 10;

/// Whether the stack left on this thread is below [`CONVERT_RESERVE`].
pub(crate) fn too_low_to_convert() -> bool {
    remaining().is_some_and(|left| left < CONVERT_RESERVE)
}

/// The smallest limit an engine runs with: below it, the thread is refused.
pub(crate) const MIN_ENGINE_STACK: usize = 64 << 10;

/// Where the stack is unknown (not Linux), the limit is at most this much: a thread's
/// stack is at least 512 KiB on the platforms Rust supports.
const UNKNOWN_STACK_LIMIT: usize = 256 << 10;

thread_local! {
    /// The lowest address of this thread's stack, found once per thread (0: unknown).
    static STACK_LOW: Cell<Option<usize>> = const { Cell::new(None) };
}

/// The engine stack limit for a run asking for `wanted` bytes on this thread.
///
/// # Errors
/// The bytes the thread has left when they are fewer than [`MIN_ENGINE_STACK`] beyond
/// [`HOST_MARGIN`].
pub(crate) fn engine_stack(wanted: usize) -> Result<usize, usize> {
    limit_within(wanted, remaining())
}

/// The limit for `wanted` bytes on a thread with `left` bytes of stack left (`None`:
/// unknown).
fn limit_within(wanted: usize, left: Option<usize>) -> Result<usize, usize> {
    let wanted = wanted.min(MAX_ENGINE_STACK);
    let Some(left) = left else {
        return Ok(wanted.min(UNKNOWN_STACK_LIMIT));
    };
    let room = left.saturating_sub(HOST_MARGIN);
    if room < MIN_ENGINE_STACK.min(wanted) {
        return Err(left);
    }
    Ok(wanted.min(room))
}

/// The lowest address a run's JavaScript may use: where its engine stops a recursion with a
/// `RangeError`, wherever the host entered the engine from.
///
/// Set once per thread the run is polled on, the run's engine stack below the loop's frame
/// ([`StackFloor::start`]). Every call from Rust into JavaScript first gives the engine its
/// limit at the floor from the calling frame: the loop with [`StackFloor::rebase`] (also
/// because a future may be polled on another thread, whose stack gets a floor of its own),
/// a host function with [`StackFloor::guard`] before each call. So the limit stays at one
/// address, give or take the few frames between the guard and rquickjs's own update.
///
/// A host function entered at the bottom of a recursion is already below the floor: it
/// must not call into JavaScript there (that would give the engine room below the floor,
/// a little more each time). [`StackFloor::enter`] refuses such an entry with the
/// engine's own `RangeError`, keeping [`ENTRY_ROOM`] for the calls the function makes on
/// its way out (settling its promise), and [`StackFloor::guard`] refuses a call from at or
/// below the floor.
#[derive(Clone, Default)]
pub(crate) struct StackFloor(Rc<Floor>);

#[derive(Default)]
struct Floor {
    /// The lowest address (0: not set yet, while the prelude loads).
    at: Cell<usize>,
    /// The run's engine stack, in bytes: how far below the loop's frame the floor is.
    size: Cell<usize>,
    /// The lowest address of the stack of the thread `at` is on (0: unknown).
    thread: Cell<usize>,
}

/// Stack above the floor a host function that calls back into JavaScript needs at its
/// entry: its own frames down to where it settles its promise.
pub(crate) const ENTRY_ROOM: usize = 16 << 10;

/// What the engine says when a recursion reaches its limit; a refused host function says
/// the same.
const STACK_EXCEEDED: &str = "Maximum call stack size exceeded";

impl StackFloor {
    /// Sets the floor `size` bytes (the run's engine stack) below this frame.
    pub(crate) fn start(&self, ctx: &Ctx<'_>, size: usize) {
        self.0.size.set(size);
        self.anchor(ctx);
    }

    /// Gives the engine its limit at the floor for calls from the loop (setting the floor
    /// again on a thread the run was not polled on before).
    pub(crate) fn rebase(&self, ctx: &Ctx<'_>) {
        let thread = stack_low().unwrap_or(0);
        if thread == 0 || thread != self.0.thread.get() {
            self.anchor(ctx);
        } else if !self.room(ctx) {
            // The loop's frame is the engine's whole stack above the floor; were it not,
            // the least limit still stops the next recursion at once.
            set_limit(ctx, 1);
        }
    }

    fn anchor(&self, ctx: &Ctx<'_>) {
        let size = self.0.size.get();
        if size == 0 {
            return;
        }
        set_limit(ctx, size);
        self.0.at.set(here().saturating_sub(size));
        self.0.thread.set(stack_low().unwrap_or(0));
    }

    /// Before a call from Rust into JavaScript: gives the engine its limit at the floor
    /// from this frame, or `false` (nothing set) when this frame is at or below the floor.
    /// Before the run starts (while the prelude loads) it sets nothing and allows the call.
    #[inline(always)]
    pub(crate) fn room(&self, ctx: &Ctx<'_>) -> bool {
        self.room_above(ctx, 0)
    }

    #[inline(always)]
    fn room_above(&self, ctx: &Ctx<'_>, needed: usize) -> bool {
        let floor = self.0.at.get();
        if floor == 0 {
            return true;
        }
        match here().checked_sub(floor) {
            Some(size) if size > needed => {
                set_limit(ctx, size);
                true
            }
            _ => false,
        }
    }

    /// [`StackFloor::room`], or the engine's `RangeError` thrown.
    ///
    /// # Errors
    /// `Error::Exception`, with the `RangeError` pending, at or below the floor.
    #[inline(always)]
    pub(crate) fn guard(&self, ctx: &Ctx<'_>) -> rquickjs::Result<()> {
        if self.room(ctx) {
            Ok(())
        } else {
            Err(Exception::throw_range(ctx, STACK_EXCEEDED))
        }
    }

    /// At the entry of a host function that calls back into JavaScript: as
    /// [`StackFloor::guard`], but refused within [`ENTRY_ROOM`] of the floor, before the
    /// function does anything.
    ///
    /// # Errors
    /// `Error::Exception`, with the `RangeError` pending, within `ENTRY_ROOM` of the floor.
    #[inline(always)]
    pub(crate) fn enter(&self, ctx: &Ctx<'_>) -> rquickjs::Result<()> {
        if self.room_above(ctx, ENTRY_ROOM) {
            Ok(())
        } else {
            Err(Exception::throw_range(ctx, STACK_EXCEEDED))
        }
    }
}

/// Moves the engine's stack top to this frame and its limit `size` bytes below it.
#[inline(always)]
fn set_limit(ctx: &Ctx<'_>, size: usize) {
    // SAFETY: a `Ctx` holds a live context, whose runtime outlives it, and exists only
    // while this thread holds the runtime's lock; both setters only store into the runtime.
    unsafe {
        let rt = qjs::JS_GetRuntime(ctx.as_raw().as_ptr());
        qjs::JS_UpdateStackTop(rt);
        qjs::JS_SetMaxStackSize(rt, size as qjs::size_t);
    }
}

/// The address of a frame close to the caller's.
#[inline(always)]
fn here() -> usize {
    let marker = 0u8;
    std::hint::black_box(&marker) as *const u8 as usize
}

/// Bytes of stack between the caller's frame and the end of this thread's stack; `None`
/// where the bounds cannot be read.
pub(crate) fn remaining() -> Option<usize> {
    let low = stack_low()?;
    here().checked_sub(low)
}

fn stack_low() -> Option<usize> {
    STACK_LOW.with(|cached| {
        if let Some(low) = cached.get() {
            return (low != 0).then_some(low);
        }
        let low = read_stack_low().unwrap_or(0);
        cached.set(Some(low));
        (low != 0).then_some(low)
    })
}

#[cfg(target_os = "linux")]
fn read_stack_low() -> Option<usize> {
    let mut attr = std::mem::MaybeUninit::<libc::pthread_attr_t>::uninit();
    // SAFETY: `pthread_getattr_np` initialises `attr` for the calling thread when it
    // returns 0; only then is it read, and it is destroyed exactly once after.
    unsafe {
        if libc::pthread_getattr_np(libc::pthread_self(), attr.as_mut_ptr()) != 0 {
            return None;
        }
        let mut addr: *mut libc::c_void = std::ptr::null_mut();
        let mut size: libc::size_t = 0;
        let read = libc::pthread_attr_getstack(attr.as_ptr(), &mut addr, &mut size);
        libc::pthread_attr_destroy(attr.as_mut_ptr());
        (read == 0 && !addr.is_null()).then_some(addr as usize)
    }
}

#[cfg(not(target_os = "linux"))]
fn read_stack_low() -> Option<usize> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(target_os = "linux")]
    fn the_limit_fits_the_thread_s_stack() {
        let on = |stack: usize, wanted: usize| {
            std::thread::Builder::new()
                .stack_size(stack)
                .spawn(move || (remaining(), engine_stack(wanted)))
                .unwrap()
                .join()
                .unwrap()
        };
        let (left, limit) = on(4 << 20, 64 << 20);
        let left = left.expect("Linux threads know their stack");
        // At least what was asked; glibc may hand a new thread the larger cached stack of
        // one that ended (a parse thread of another test, say), so no upper bound.
        assert!(left > (4 << 20) - (64 << 10), "{left}");
        // Measured a few frames apart.
        let limit = limit.unwrap();
        assert!(limit.abs_diff(left - HOST_MARGIN) < 1024, "{limit} {left}");
        // A small request is kept as asked.
        assert_eq!(on(4 << 20, 256 << 10).1, Ok(256 << 10));
    }

    #[test]
    fn a_thread_too_small_is_refused_and_an_unknown_one_gets_little() {
        assert_eq!(
            limit_within(8 << 20, Some(3 << 20)),
            Ok((3 << 20) - HOST_MARGIN)
        );
        assert_eq!(
            limit_within(8 << 20, Some(HOST_MARGIN + (32 << 10))),
            Err(HOST_MARGIN + (32 << 10))
        );
        assert_eq!(limit_within(8 << 20, Some(100)), Err(100));
        // A request below the least limit is granted when it fits.
        assert_eq!(
            limit_within(16 << 10, Some(HOST_MARGIN + (32 << 10))),
            Ok(16 << 10)
        );
        assert_eq!(limit_within(8 << 20, None), Ok(UNKNOWN_STACK_LIMIT));
        // Past what QuickJS takes as a limit: the largest it takes.
        assert_eq!(limit_within(1 << 30, Some(2 << 30)), Ok(MAX_ENGINE_STACK));
    }
}
