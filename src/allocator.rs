//! mimalloc's run-time settings (its build-time ones are in `.cargo/config.toml`).

/// `mi_option_purge_delay` in the `mi_option_e` enum of the mimalloc that
/// libmimalloc-sys bundles (v3 `include/mimalloc.h`).
pub const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Memory mimalloc frees goes back to the system at once, not a second later:
/// a crawl frees page bodies and store buffers all the time, and a second of
/// them was ~10–30 MB of peak RSS on the shared bench (docs/PERFORMANCE.md, "Memory").
pub fn return_freed_memory_at_once() {
    // SAFETY: mimalloc reads this option whenever it purges; setting it at
    // any time is allowed.
    unsafe { libmimalloc_sys::mi_option_set(PURGE_DELAY, 0) }
}
