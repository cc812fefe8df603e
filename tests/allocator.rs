//! The allocator is built and set up as docs/PERFORMANCE.md ("Memory")
//! measured it: mimalloc commits its arenas as they are used
//! (`.cargo/config.toml` defines `MI_DEFAULT_ARENA_EAGER_COMMIT=0`) and the
//! binary has it give freed memory back at once (`crawldeck::allocator`).

use crawldeck::allocator;

/// `mi_option_arena_eager_commit` in the `mi_option_e` enum of the mimalloc
/// that libmimalloc-sys bundles (v3 `include/mimalloc.h`).
const ARENA_EAGER_COMMIT: libmimalloc_sys::mi_option_t = 4;
/// `mi_option_os_tag`: its default (100) pins the enum's numbering.
const OS_TAG: libmimalloc_sys::mi_option_t = 18;

fn option(option: libmimalloc_sys::mi_option_t) -> std::os::raw::c_long {
    // SAFETY: reading an option has no precondition.
    unsafe { libmimalloc_sys::mi_option_get(option) }
}

#[test]
fn mimalloc_commits_its_arenas_as_they_are_used() {
    assert_eq!(
        option(OS_TAG),
        100,
        "the option numbers moved: see mimalloc.h"
    );
    assert_eq!(
        option(ARENA_EAGER_COMMIT),
        0,
        "mimalloc was built without MI_DEFAULT_ARENA_EAGER_COMMIT=0 (.cargo/config.toml; \
         a CFLAGS of your own replaces it), or MIMALLOC_ARENA_EAGER_COMMIT is set"
    );
}

#[test]
fn freed_memory_goes_back_at_once() {
    assert_eq!(
        option(OS_TAG),
        100,
        "the option numbers moved: see mimalloc.h"
    );
    let default = option(allocator::PURGE_DELAY);
    assert_eq!(default, 1000, "PURGE_DELAY names another option");
    allocator::return_freed_memory_at_once();
    assert_eq!(option(allocator::PURGE_DELAY), 0);
}
