//! Freed small blocks kept for reuse, in front of the system allocator. It is
//! the global allocator of plugins built for Wasm (feature `block-cache`, on
//! by default).
//!
//! Every call across the component boundary allocates and frees: a list
//! argument arrives through `cabi_realloc`, an answer's lists are freed after
//! the call, events come as a list. In wasi-libc, `malloc` is dlmalloc behind
//! three wrappers: an allocation and its free execute about 450 instructions
//! once compiled (counted by callgrind), more than scoring a node. Here a
//! freed block of up to 64 KiB goes on the free list of its size class (powers
//! of two from 16 bytes), and the next allocation of that class takes it back
//! in a few instructions. Larger blocks, and alignments above 16, go to the
//! system allocator.
//!
//! Kept blocks are never handed back, so the cache holds at most the largest
//! number of blocks of each class that were in use at once.
//!
//! Single-threaded only: the free lists are not safe against concurrent use.
//! A component instance runs on one thread (wasm32-wasip2 has no threads), and
//! the tests use one cache per test.

use std::alloc::{GlobalAlloc, Layout};
use std::ptr;
use std::sync::atomic::{AtomicPtr, Ordering::Relaxed};

/// The smallest class, 16 bytes: room for the link, and the largest
/// alignment served.
const MIN_SHIFT: u32 = 4;
/// The largest class, 64 KiB.
const MAX_SHIFT: u32 = 16;
const CLASSES: usize = (MAX_SHIFT - MIN_SHIFT + 1) as usize;

/// A cache of freed blocks by size class, over the allocator `A`.
pub struct BlockCache<A> {
    inner: A,
    /// Per class, the last freed block; each free block's first word links
    /// to the one freed before it.
    free: [AtomicPtr<u8>; CLASSES],
}

impl<A> BlockCache<A> {
    /// An empty cache over `inner`.
    pub const fn new(inner: A) -> Self {
        BlockCache { inner, free: [const { AtomicPtr::new(ptr::null_mut()) }; CLASSES] }
    }
}

/// The size class of `layout`, if it has one.
fn class(layout: Layout) -> Option<usize> {
    if layout.size() > 1 << MAX_SHIFT || layout.align() > 1 << MIN_SHIFT {
        return None;
    }
    let size = layout.size().max(1 << MIN_SHIFT);
    Some((usize::BITS - (size - 1).leading_zeros() - MIN_SHIFT) as usize)
}

/// The layout of a block of class `c`, as asked of the inner allocator.
fn block(c: usize) -> Layout {
    // SAFETY: a power of two up to 64 KiB, aligned to 16, is a valid layout.
    unsafe { Layout::from_size_align_unchecked(1 << (c as u32 + MIN_SHIFT), 1 << MIN_SHIFT) }
}

// SAFETY: blocks of a class are at least as large and as aligned as any
// layout mapped to it, a block is on at most one free list, and a listed
// block is not handed out twice (single-threaded use, see the module docs).
unsafe impl<A: GlobalAlloc> GlobalAlloc for BlockCache<A> {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let Some(c) = class(layout) else {
            // SAFETY: the caller's layout, passed on.
            return unsafe { self.inner.alloc(layout) };
        };
        let head = self.free[c].load(Relaxed);
        if head.is_null() {
            // SAFETY: `block(c)` has a non-zero size.
            return unsafe { self.inner.alloc(block(c)) };
        }
        // SAFETY: a listed block is free and 16-aligned, its first word the link.
        self.free[c].store(unsafe { head.cast::<*mut u8>().read() }, Relaxed);
        head
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        match class(layout) {
            // SAFETY: allocated by `inner` with this layout (see `alloc`).
            None => unsafe { self.inner.dealloc(ptr, layout) },
            Some(c) => {
                // SAFETY: the caller gives the block up; it is at least 16 bytes.
                unsafe { ptr.cast::<*mut u8>().write(self.free[c].load(Relaxed)) };
                self.free[c].store(ptr, Relaxed);
            }
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let Ok(new) = Layout::from_size_align(new_size, layout.align()) else {
            return ptr::null_mut();
        };
        match (class(layout), class(new)) {
            // The block already has room (Vec's doubling stays in place until
            // the class changes).
            (Some(a), Some(b)) if a == b => ptr,
            // SAFETY: allocated by `inner` with `layout`; `new` is valid.
            (None, None) => unsafe { self.inner.realloc(ptr, layout, new_size) },
            _ => {
                // SAFETY: `new` is valid; both blocks hold the bytes copied.
                let moved = unsafe { self.alloc(new) };
                if !moved.is_null() {
                    unsafe {
                        ptr::copy_nonoverlapping(ptr, moved, layout.size().min(new_size));
                        self.dealloc(ptr, layout);
                    }
                }
                moved
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::alloc::System;

    fn layout(size: usize, align: usize) -> Layout {
        Layout::from_size_align(size, align).unwrap()
    }

    #[test]
    fn classes_are_powers_of_two_from_16_bytes_to_64_kib() {
        assert_eq!(class(layout(0, 1)), Some(0));
        assert_eq!(class(layout(16, 8)), Some(0));
        assert_eq!(class(layout(17, 4)), Some(1));
        assert_eq!(class(layout(4000, 4)), Some(8));
        assert_eq!(class(layout(4096, 16)), Some(8));
        assert_eq!(class(layout(1 << 16, 8)), Some(CLASSES - 1));
        assert_eq!(class(layout((1 << 16) + 1, 8)), None);
        assert_eq!(class(layout(64, 32)), None);
        for c in 0..CLASSES {
            assert_eq!(class(block(c)), Some(c));
        }
    }

    #[test]
    fn a_freed_block_serves_the_next_allocation_of_its_class() {
        let cache = BlockCache::new(System);
        unsafe {
            let a = cache.alloc(layout(24, 8));
            let b = cache.alloc(layout(30, 4));
            assert_ne!(a, b);
            cache.dealloc(a, layout(24, 8));
            cache.dealloc(b, layout(30, 4));
            // Last freed, first served; another class does not take them.
            let other = cache.alloc(layout(100, 8));
            assert!(other != a && other != b);
            assert_eq!(cache.alloc(layout(32, 16)), b);
            assert_eq!(cache.alloc(layout(17, 1)), a);
            assert!(![a, b].contains(&cache.alloc(layout(20, 4))));
        }
    }

    #[test]
    fn blocks_hold_their_bytes_while_others_come_and_go() {
        let cache = BlockCache::new(System);
        unsafe {
            let sizes = [1, 15, 16, 33, 500, 4096, 60_000, 1 << 16, 100_000];
            let blocks: Vec<(*mut u8, Layout)> = sizes
                .iter()
                .enumerate()
                .map(|(i, &n)| {
                    let l = layout(n, 8);
                    let p = cache.alloc(l);
                    assert!(!p.is_null() && (p as usize).is_multiple_of(8));
                    ptr::write_bytes(p, i as u8 + 1, n);
                    (p, l)
                })
                .collect();
            // Churn every class, then check nothing overwrote a live block.
            for &n in &sizes {
                let p = cache.alloc(layout(n, 8));
                ptr::write_bytes(p, 0xee, n);
                cache.dealloc(p, layout(n, 8));
            }
            for (i, &(p, l)) in blocks.iter().enumerate() {
                assert!(std::slice::from_raw_parts(p, l.size()).iter().all(|&b| b == i as u8 + 1), "block {i}");
                cache.dealloc(p, l);
            }
        }
    }

    #[test]
    fn realloc_stays_within_a_class_and_copies_across_classes() {
        let cache = BlockCache::new(System);
        unsafe {
            let l = layout(20, 4);
            let p = cache.alloc(l);
            ptr::copy_nonoverlapping(b"0123456789abcdefghij".as_ptr(), p, 20);
            // 20 → 32 bytes: the same block.
            assert_eq!(cache.realloc(p, l, 32), p);
            // 32 → 200 bytes, then past the largest class: moved, bytes kept.
            let q = cache.realloc(p, layout(32, 4), 200);
            assert_ne!(q, p);
            assert_eq!(std::slice::from_raw_parts(q, 20), b"0123456789abcdefghij");
            let r = cache.realloc(q, layout(200, 4), 200_000);
            assert_eq!(std::slice::from_raw_parts(r, 20), b"0123456789abcdefghij");
            // And back down into a class.
            let s = cache.realloc(r, layout(200_000, 4), 10);
            assert_eq!(std::slice::from_raw_parts(s, 10), b"0123456789");
            cache.dealloc(s, layout(10, 4));
            // The block given up by the first move is reused.
            assert_eq!(cache.alloc(layout(32, 4)), p);
        }
    }

    #[test]
    fn over_aligned_and_large_layouts_go_to_the_inner_allocator() {
        let cache = BlockCache::new(System);
        unsafe {
            let big = layout(1 << 20, 8);
            let p = cache.alloc(big);
            cache.dealloc(p, big);
            let aligned = layout(64, 64);
            let q = cache.alloc(aligned);
            assert!((q as usize).is_multiple_of(64));
            cache.dealloc(q, aligned);
            assert!(cache.free.iter().all(|f| f.load(Relaxed).is_null()), "nothing was cached");
        }
    }
}
