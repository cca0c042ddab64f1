//! Counters reported by `INFO msetex`, since the module was loaded.

use std::ffi::CStr;
use std::sync::atomic::{AtomicU64, Ordering};

// Process-wide: the server's INFO callback carries no module pointer.
static CALLS: AtomicU64 = AtomicU64::new(0);
static KEYS_SET: AtomicU64 = AtomicU64::new(0);
static KEYS_IN_PLACE: AtomicU64 = AtomicU64::new(0);
static ERRORS: AtomicU64 = AtomicU64::new(0);

/// A call reached the module (the server's own refusals, such as ACL or OOM, never do).
pub fn record_call() {
    CALLS.fetch_add(1, Ordering::Relaxed);
}

pub fn record_keys(n: usize) {
    KEYS_SET.fetch_add(n as u64, Ordering::Relaxed);
}

/// `n` keys were written in place.
pub fn record_in_place(n: usize) {
    KEYS_IN_PLACE.fetch_add(n as u64, Ordering::Relaxed);
}

pub fn record_error() {
    ERRORS.fetch_add(1, Ordering::Relaxed);
}

/// The counters as (field name, value) pairs, in INFO order.
pub fn fields() -> [(&'static CStr, u64); 4] {
    let get = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
    [
        (c"calls", get(&CALLS)),
        (c"keys_set", get(&KEYS_SET)),
        (c"keys_in_place", get(&KEYS_IN_PLACE)),
        (c"errors", get(&ERRORS)),
    ]
}
