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

/// Call once at start-up, before the first batch (`weir` does; so do the
/// benches, which measure what `weir` runs). The `weir` binary and the
/// benches allocate with mimalloc, which keeps its own large blocks; this
/// tunes glibc's malloc, which still serves the C libraries linked in
/// (librdkafka) and any embedder that keeps the system allocator.
pub fn keep_batch_buffers() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets allocator parameters; it is called before
    // any thread of ours allocates.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 128 << 20);
    }
}
