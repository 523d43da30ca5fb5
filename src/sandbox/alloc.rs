//! The sandbox's memory limit: an allocator for QuickJS that counts every byte and refuses
//! past the limit, and remembers that it refused.
//!
//! Why not `JS_SetMemoryLimit`: JavaScript can catch QuickJS's out-of-memory error and carry
//! on, so the host could not tell afterwards that the limit was hit. Counting here, the
//! refusal raises a flag the interrupt handler and the driver read, which makes running out
//! of memory fatal for the run even when the program catches it (DESIGN §5 "Sandbox").
//!
//! This is the only module with `unsafe` code: the [`rquickjs::allocator::Allocator`] trait
//! hands out raw pointers. Each block states why it is sound.
#![expect(
    unsafe_code,
    reason = "implementing rquickjs's Allocator trait requires raw allocation"
)]

use std::alloc::{Layout, alloc, alloc_zeroed, dealloc, realloc};
use std::ptr;
use std::sync::Arc;

use rquickjs::allocator::Allocator;

use super::flags::RunFlags;

/// Alignment of every block: enough for any value QuickJS stores (`max_align_t` is 16 on the
/// 64-bit targets we build for).
const ALIGN: usize = 16;
/// Bytes in front of each block that record its requested size.
const HEADER: usize = 16;

/// Counts the bytes QuickJS holds and refuses allocations past `limit`.
pub(crate) struct LimitedAllocator {
    limit: usize,
    used: usize,
    flags: Arc<RunFlags>,
}

impl LimitedAllocator {
    pub(crate) fn new(limit: usize, flags: Arc<RunFlags>) -> Self {
        LimitedAllocator {
            limit,
            used: 0,
            flags,
        }
    }

    fn layout(size: usize) -> Option<Layout> {
        Layout::from_size_align(size.checked_add(HEADER)?, ALIGN).ok()
    }

    fn refuse(&self) -> *mut u8 {
        self.flags.out_of_memory();
        ptr::null_mut()
    }

    fn allocate(&mut self, size: usize, zeroed: bool) -> *mut u8 {
        let size = size.max(1);
        if self.used.saturating_add(size) > self.limit {
            return self.refuse();
        }
        let Some(layout) = Self::layout(size) else {
            return self.refuse();
        };
        // SAFETY: `layout` has a non-zero size (HEADER > 0) and a valid alignment.
        let base = unsafe {
            if zeroed {
                alloc_zeroed(layout)
            } else {
                alloc(layout)
            }
        };
        if base.is_null() {
            return self.refuse();
        }
        self.used += size;
        // SAFETY: `base` points to at least HEADER + size bytes aligned to ALIGN, so the
        // header write is in bounds and aligned for `usize`, and `base + HEADER` is inside
        // the block.
        unsafe {
            base.cast::<usize>().write(size);
            base.add(HEADER)
        }
    }
}

/// Reads the size recorded in front of a block this allocator returned.
///
/// # Safety
/// `ptr` must have been returned by [`LimitedAllocator`] and not freed.
unsafe fn block_size(ptr: *mut u8) -> usize {
    // SAFETY: guaranteed by the caller: the header lies HEADER bytes before `ptr`.
    unsafe { ptr.sub(HEADER).cast::<usize>().read() }
}

// SAFETY: every pointer handed out points HEADER bytes into a block allocated from the
// global allocator with `Self::layout(size)`, whose header records `size`; `dealloc`,
// `realloc` and `usable_size` recover the same layout from that header.
unsafe impl Allocator for LimitedAllocator {
    fn alloc(&mut self, size: usize) -> *mut u8 {
        self.allocate(size, false)
    }

    fn calloc(&mut self, count: usize, size: usize) -> *mut u8 {
        match count.checked_mul(size) {
            Some(total) => self.allocate(total, true),
            None => self.refuse(),
        }
    }

    unsafe fn dealloc(&mut self, ptr: *mut u8) {
        if ptr.is_null() {
            return;
        }
        // SAFETY: the trait's contract: `ptr` came from this allocator.
        unsafe {
            let size = block_size(ptr);
            self.used = self.used.saturating_sub(size);
            if let Some(layout) = Self::layout(size) {
                dealloc(ptr.sub(HEADER), layout);
            }
        }
    }

    unsafe fn realloc(&mut self, ptr: *mut u8, new_size: usize) -> *mut u8 {
        if ptr.is_null() {
            return self.allocate(new_size, false);
        }
        let new_size = new_size.max(1);
        // SAFETY: the trait's contract: `ptr` came from this allocator and is live.
        unsafe {
            let old_size = block_size(ptr);
            if new_size > old_size && self.used - old_size + new_size > self.limit {
                return self.refuse();
            }
            let (Some(old_layout), Some(_)) = (Self::layout(old_size), Self::layout(new_size))
            else {
                return self.refuse();
            };
            let base = realloc(ptr.sub(HEADER), old_layout, new_size + HEADER);
            if base.is_null() {
                return self.refuse();
            }
            self.used = self.used - old_size + new_size;
            base.cast::<usize>().write(new_size);
            base.add(HEADER)
        }
    }

    unsafe fn usable_size(ptr: *mut u8) -> usize {
        if ptr.is_null() {
            return 0;
        }
        // SAFETY: the trait's contract: `ptr` came from this allocator.
        unsafe { block_size(ptr) }
    }
}
