//! A global allocator that counts the live heap bytes of the program it is installed in: the
//! memory benchmarks' measure of what sessions hold (RSS cannot tell freed from leaked, since
//! glibc keeps freed pages). Benchmark binaries only; the libraries allocate with whatever
//! allocator their user chose. A binary installs it with
//! `#[global_allocator] static ALLOCATOR: CountingAllocator = CountingAllocator;`.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};

/// Bytes currently allocated through [`CountingAllocator`]: allocations minus deallocations.
static LIVE_BYTES: AtomicIsize = AtomicIsize::new(0);

/// The bytes the program holds on the heap right now.
pub fn live_bytes() -> isize {
    LIVE_BYTES.load(Ordering::Relaxed)
}

/// The system allocator, counting the bytes it holds for the program.
pub struct CountingAllocator;

fn count(bytes: usize, sign: isize) {
    LIVE_BYTES.fetch_add(
        sign * isize::try_from(bytes).unwrap_or(isize::MAX),
        Ordering::Relaxed,
    );
}

// SAFETY: every method forwards its arguments unchanged to `System`, which upholds the
// `GlobalAlloc` contract; the only addition is a counter update after a successful call.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller upholds `alloc`'s contract, which is `System.alloc`'s.
        let pointer = unsafe { System.alloc(layout) };
        if !pointer.is_null() {
            count(layout.size(), 1);
        }
        pointer
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        let pointer = unsafe { System.alloc_zeroed(layout) };
        if !pointer.is_null() {
            count(layout.size(), 1);
        }
        pointer
    }

    unsafe fn dealloc(&self, pointer: *mut u8, layout: Layout) {
        // SAFETY: `pointer` came from this allocator with `layout`, so from `System`.
        unsafe { System.dealloc(pointer, layout) };
        count(layout.size(), -1);
    }

    unsafe fn realloc(&self, pointer: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `pointer` came from this allocator with `layout`, so from `System`.
        let moved = unsafe { System.realloc(pointer, layout, new_size) };
        if !moved.is_null() {
            count(new_size, 1);
            count(layout.size(), -1);
        }
        moved
    }
}
