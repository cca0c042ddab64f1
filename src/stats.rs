//! Counters reported by `INFO msetex`, since the module was loaded.

use std::ffi::CStr;
use std::sync::atomic::{AtomicU64, Ordering};

/// The counters, process-wide: the server's INFO callback carries no module pointer.
struct Stats {
    calls: AtomicU64,
    keys_set: AtomicU64,
    keys_in_place: AtomicU64,
    errors: AtomicU64,
}

static STATS: Stats = Stats {
    calls: AtomicU64::new(0),
    keys_set: AtomicU64::new(0),
    keys_in_place: AtomicU64::new(0),
    errors: AtomicU64::new(0),
};

fn add(counter: &AtomicU64, n: usize) {
    counter.fetch_add(n as u64, Ordering::Relaxed);
}

/// A call reached the module (the server's own refusals, such as ACL or OOM, never do).
pub fn record_call() {
    add(&STATS.calls, 1);
}

/// `n` keys were written.
pub fn record_keys(n: usize) {
    add(&STATS.keys_set, n);
}

/// `n` of them were written into their old strings, in place.
pub fn record_in_place(n: usize) {
    add(&STATS.keys_in_place, n);
}

/// A call answered with an error.
pub fn record_error() {
    add(&STATS.errors, 1);
}

/// The counters as (field name, value) pairs, in INFO order.
pub fn fields() -> [(&'static CStr, u64); 4] {
    let get = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
    [
        (c"calls", get(&STATS.calls)),
        (c"keys_set", get(&STATS.keys_set)),
        (c"keys_in_place", get(&STATS.keys_in_place)),
        (c"errors", get(&STATS.errors)),
    ]
}
