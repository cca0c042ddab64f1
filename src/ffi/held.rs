//! Values the command filter takes out of a call (`Reading::KeysOnly`: Valkey in cluster mode)
//! and holds for the command: the strings the client sent, not copies. Held by client and call
//! (a token the filter writes into the packed argument), in the order filtered.
//!
//! Only the main thread runs the filter, the command and the server events that release them.
//! A client's held values are released when its next call is filtered outside MULTI (a call
//! refused after the filter never ran), when a later call of it runs, or when it disconnects.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use redis_module::raw;

use super::api::{Api, OK};
use super::ctx::{Ctx, OwnedString};

struct Call {
    token: u64,
    values: Vec<OwnedString>,
}

/// Calls whose values are held, by client id.
struct Clients(BTreeMap<u64, VecDeque<Call>>);

// SAFETY: the strings are created, used and released on the main thread only (module doc).
unsafe impl Send for Clients {}

static HELD: Mutex<Clients> = Mutex::new(Clients(BTreeMap::new()));
static NEXT: AtomicU64 = AtomicU64::new(1);

/// A token for the next filtered call (never 0).
pub(super) fn next_token() -> u64 {
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// Holds `values` for call `token` of the client that sent the filtered command; false if they
/// cannot be held (the call is then refused).
pub(super) fn hold(
    api: &Api,
    filter: *mut raw::RedisModuleCommandFilterCtx,
    token: u64,
    values: Vec<OwnedString>,
) -> bool {
    let Some(client_id) = api.command_filter_get_client_id else {
        return false;
    };
    // SAFETY: filter is the live filter context of the command being filtered.
    let client = unsafe { client_id(filter) };
    let Ok(mut held) = HELD.lock() else {
        return false;
    };
    let calls = held.0.entry(client).or_default();
    // Its calls filtered before: queued in MULTI, or refused after the filter (never run).
    if !calls.is_empty() && !in_multi(api, client) {
        calls.clear();
    }
    calls.push_back(Call { token, values });
    true
}

/// How many calls' values are held (INFO msetex `held_calls`).
pub fn held_calls() -> usize {
    HELD.lock()
        .map_or(0, |held| held.0.values().map(VecDeque::len).sum())
}

/// Releases every value held for `client`.
pub(super) fn forget(client: u64) {
    if let Ok(mut held) = HELD.lock() {
        held.0.remove(&client);
    }
}

impl Ctx<'_> {
    /// The values held for call `token` of this context's client, if there are `count`; calls
    /// of the client filtered before it, which never ran, are released.
    pub fn take_held(&self, token: u64, count: usize) -> Option<Vec<OwnedString>> {
        // SAFETY: the context is live for the command's duration.
        let client = unsafe { (self.api.get_client_id)(self.raw) };
        let mut held = HELD.lock().ok()?;
        let calls = held.0.get_mut(&client)?;
        while calls.front().is_some_and(|call| call.token < token) {
            calls.pop_front();
        }
        let values = match calls.front() {
            Some(call) if call.token == token => calls.pop_front().map(|call| call.values),
            _ => None,
        };
        if calls.is_empty() {
            held.0.remove(&client);
        }
        values.filter(|values| values.len() == count)
    }
}

/// Whether `client` is in MULTI (its calls queued); not for a client the server does not list
/// (another module's call), or where it cannot tell.
fn in_multi(api: &Api, client: u64) -> bool {
    let Some(info_by_id) = api.get_client_info_by_id else {
        return false;
    };
    let mut info = raw::RedisModuleClientInfo {
        version: 1,
        flags: 0,
        id: 0,
        addr: [0; 46],
        port: 0,
        db: 0,
    };
    // SAFETY: info is a version-1 client info the server fills; the id is any number.
    let found = unsafe { info_by_id((&raw mut info).cast(), client) } == OK;
    found && info.flags & u64::from(raw::REDISMODULE_CLIENTINFO_FLAG_MULTI) != 0
}
