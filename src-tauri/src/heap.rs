//! Giving the heap that start-up freed back to the system. glibc's allocator keeps what is freed
//! in its arenas (one per thread that allocated, up to eight per core: the tokio workers, one per
//! SQLite connection's worker thread, GTK's and WebKit's threads) and returns only the free top
//! of the main heap by itself; the start-up's transient memory (the database's `quick_check`
//! over every page, the migrations, the sandbox simulators' set-up, the first Bandeja queries)
//! stays resident for the life of the process although nothing uses it. `malloc_trim` hands
//! every arena's free pages back (measured in docs/performance.md, "Memory at idle").
//!
//! [`release_freed`] runs once the start-up is done; [`start`] repeats it every
//! [`SETTLING_EVERY`] during the first [`SETTLING`] (most of the start-up's garbage is freed
//! between 6 and 12 s after launch, as the first screens' queries settle) and then every two
//! minutes while the app runs (a trim walks the free lists only: well under a millisecond for
//! this heap). Elsewhere than glibc (macOS, Windows, musl) it does nothing.

use std::time::Duration;

/// How often the running app gives freed heap back.
const EVERY: Duration = Duration::from_secs(120);

/// How long after start-up the app trims more often, and how often then.
const SETTLING: Duration = Duration::from_secs(60);
const SETTLING_EVERY: Duration = Duration::from_secs(10);

/// Returns the free pages of every malloc arena to the system.
pub fn release_freed() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        extern "C" {
            fn malloc_trim(pad: usize) -> std::os::raw::c_int;
        }
        // SAFETY: glibc's `malloc_trim` takes no pointer and is thread-safe (it locks each
        // arena in turn); it only releases pages no allocation uses.
        unsafe {
            malloc_trim(0);
        }
    }
}

/// The periodic trim, for the app's lifetime; the first one `after` start-up.
pub fn start(after: Duration) {
    tauri::async_runtime::spawn(async move {
        tokio::time::sleep(after).await;
        let started = std::time::Instant::now();
        loop {
            release_freed();
            let next = if started.elapsed() < SETTLING { SETTLING_EVERY } else { EVERY };
            tokio::time::sleep(next).await;
        }
    });
}
