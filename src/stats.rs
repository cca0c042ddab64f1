//! Counters reported by `INFO msetex`, since the module was loaded.

use std::ffi::CStr;
use std::sync::atomic::{AtomicU64, Ordering};

static CALLS: AtomicU64 = AtomicU64::new(0);
static KEYS_SET: AtomicU64 = AtomicU64::new(0);
static KEYS_IN_PLACE: AtomicU64 = AtomicU64::new(0);
static ERRORS: AtomicU64 = AtomicU64::new(0);

/// A call reached the module (refusals by the server itself, such as ACL
/// or OOM, never do).
pub fn record_call() {
    CALLS.fetch_add(1, Ordering::Relaxed);
}

/// `n` keys were written.
pub fn record_keys(n: usize) {
    KEYS_SET.fetch_add(n as u64, Ordering::Relaxed);
}

/// `n` of them were written into their old strings, in place.
pub fn record_in_place(n: usize) {
    KEYS_IN_PLACE.fetch_add(n as u64, Ordering::Relaxed);
}

/// A call answered with an error.
pub fn record_error() {
    ERRORS.fetch_add(1, Ordering::Relaxed);
}

/// The counters as (field name, value) pairs, in INFO order.
pub fn fields() -> [(&'static CStr, u64); 4] {
    [
        (c"calls", CALLS.load(Ordering::Relaxed)),
        (c"keys_set", KEYS_SET.load(Ordering::Relaxed)),
        (c"keys_in_place", KEYS_IN_PLACE.load(Ordering::Relaxed)),
        (c"errors", ERRORS.load(Ordering::Relaxed)),
    ]
}
