//! How the process's allocator treats batch-sized buffers.
//!
//! A batch moves through several buffers of up to `max-bytes-per-trigger`
//! (16 MiB by default): the bytes read, the batch's columns, the guest's
//! output, the sink's encoding. glibc serves blocks that size with `mmap` and
//! returns them with `munmap` (its threshold adapts only up to 32 MiB, and
//! shrinks the heap when more than twice that is free), so every batch
//! faulted its buffers in again: W1 spent a quarter of its system time
//! zeroing fresh pages. Keeping such blocks in the heap lets the next batch
//! reuse them; memory is still returned once more than 128 MiB lies free at
//! the top of the heap.
//!
//! Transparent huge pages are turned off for the process (unless
//! `MIMALLOC_ALLOW_THP` is set, mimalloc's own switch for this): mimalloc
//! asks for them on its arenas, so every fault zeroed 2 MiB, mostly of
//! blocks touched in part. W3 ran with 1.2 s of system time of 2.2 s wall
//! with them and 0.4-0.6 s without, at a lower peak RSS (470 against
//! 525 MiB) and no more user time; Redis and MongoDB advise the same.
//!
//! mimalloc returns freed memory to the OS after 10 ms (100 ms for its
//! arenas), shorter than a batch: each batch faulted in again the pages the
//! last one had freed, and W3 spent 8-9% of its CPU time in those faults
//! and in `madvise`. A purge delay of one second (ten for arenas) keeps
//! them from batch to batch, for about 20% more peak RSS on W3 (352-370
//! against 296-307 MB); freed memory still goes back to the OS, that much
//! later.
//! `MIMALLOC_PURGE_DELAY`, when set, wins.

/// `mi_option_purge_delay` in mimalloc's option enum (the Rust bindings
/// name no constant for it); the test below checks it is that option.
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;
const PURGE_DELAY_MS: std::ffi::c_long = 1000;

/// Call once at start-up, before the first batch (`weir` does; so do the
/// benches, which measure what `weir` runs). The `weir` binary and the
/// benches allocate with mimalloc, which keeps its own large blocks; the
/// `mallopt` calls tune glibc's malloc, which still serves the C libraries
/// linked in (librdkafka) and any embedder that keeps the system allocator.
pub fn keep_batch_buffers() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets allocator parameters; it is called before
    // any thread of ours allocates.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 128 << 20);
    }
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: sets one of mimalloc's options, which it reads on its
        // next purge; options are plain atomics.
        unsafe {
            libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, PURGE_DELAY_MS);
        }
    }
    #[cfg(target_os = "linux")]
    if std::env::var_os("MIMALLOC_ALLOW_THP").is_none() {
        // SAFETY: sets a flag of this process's memory map (later faults
        // use small pages); touches no memory of ours. On failure (an old
        // kernel) huge pages simply stay on.
        unsafe {
            libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_purge_delay_is_mimallocs_option_of_that_name() {
        // SAFETY: reads an option.
        let default = unsafe { libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY) };
        // mimalloc's default purge delay, unless the environment set one.
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
            assert!(default == 10 || default == PURGE_DELAY_MS, "{default}");
        }
        keep_batch_buffers();
        // SAFETY: reads an option.
        let now = unsafe { libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY) };
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
            assert_eq!(now, PURGE_DELAY_MS);
        }
    }
}
