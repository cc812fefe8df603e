//! The allocator is built as the README's "Memory" section measured it:
//! mimalloc commits its arenas as they are used (`.cargo/config.toml`
//! defines `MI_DEFAULT_ARENA_EAGER_COMMIT=0`), which takes ~23 % off the peak
//! RSS of the shared bench's crawl.

/// `mi_option_arena_eager_commit` in the `mi_option_e` enum of the mimalloc
/// that libmimalloc-sys bundles (v3 `include/mimalloc.h`).
const ARENA_EAGER_COMMIT: libmimalloc_sys::mi_option_t = 4;
/// `mi_option_purge_delay`: its default (1000 ms) pins the enum's numbering.
const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

#[test]
fn mimalloc_commits_its_arenas_as_they_are_used() {
    // SAFETY: reading an option has no precondition.
    let (eager, purge) = unsafe {
        (
            libmimalloc_sys::mi_option_get(ARENA_EAGER_COMMIT),
            libmimalloc_sys::mi_option_get(PURGE_DELAY),
        )
    };
    assert_eq!(purge, 1000, "the option numbers moved: see mimalloc.h");
    assert_eq!(
        eager, 0,
        "mimalloc was built without MI_DEFAULT_ARENA_EAGER_COMMIT=0 (.cargo/config.toml; \
         a CFLAGS of your own replaces it), or MIMALLOC_ARENA_EAGER_COMMIT is set"
    );
}
