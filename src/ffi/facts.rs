//! What the server says about itself at load: INFO fields, numeric configs, cluster mode, which
//! commands answer under their names.

use std::ffi::{CStr, CString};

use libc::c_int;
use redis_module::raw::{self, RedisModuleCtx};

use super::api::{API, OK};
use super::call::{config_get, CallValue};
use super::ctx::Ctx;

/// Reads `fields` of the INFO section `section`; missing fields are left out.
pub fn server_info_fields(section: &CStr, fields: &[&'static str]) -> Vec<(&'static str, String)> {
    let Some(api) = API.get() else {
        return Vec::new();
    };
    // SAFETY: a NULL ctx makes the data ours to free; section is NUL-terminated.
    let data = unsafe { (api.get_server_info)(std::ptr::null_mut(), section.as_ptr()) };
    if data.is_null() {
        return Vec::new();
    }
    let found = fields
        .iter()
        .filter_map(|field| {
            let name = CString::new(*field).ok()?;
            // SAFETY: data is live until freed below; its returned C string is copied before that.
            let value = unsafe { (api.server_info_get_field_c)(data, name.as_ptr()) };
            (!value.is_null()).then(|| {
                // SAFETY: non-null, NUL-terminated, owned by data (still live).
                let value = unsafe { CStr::from_ptr(value) };
                (*field, value.to_string_lossy().into_owned())
            })
        })
        .collect();
    // SAFETY: data came from GetServerInfo with a NULL ctx and is freed once.
    unsafe { (api.free_server_info)(std::ptr::null_mut(), data) };
    found
}

/// A numeric config at load: read directly where the server can (Redis 8.6.3), else by `CONFIG
/// GET`; None when neither works (CONFIG renamed away).
pub fn config_number(ctx: *mut RedisModuleCtx, name: &CStr) -> Option<i64> {
    let api = API.get()?;
    if let Some(get_numeric) = api.config_get_numeric {
        let mut value: libc::c_longlong = 0;
        // SAFETY: ctx is the load context; name is NUL-terminated; value is a valid out pointer.
        if unsafe { get_numeric(ctx, name.as_ptr(), &mut value) } == OK {
            return Some(value);
        }
    }
    config_get(ctx, api, name).and_then(|value| value.trim().parse().ok())
}

/// True when the context flags say the server runs in cluster mode.
pub fn cluster_enabled(ctx: *mut RedisModuleCtx) -> bool {
    let Some(api) = API.get() else {
        return false;
    };
    // SAFETY: ctx is the load context; the call only reads flags.
    let flags = unsafe { (api.get_context_flags)(ctx) };
    flags & raw::REDISMODULE_CTX_FLAGS_CLUSTER as c_int != 0
}

/// Whether the server runs `name` under that name (not renamed away): a bare `RedisModule_Call`
/// fails with EINVAL (arity) before running it if it is there; ENOENT or other: not there.
pub fn command_callable(ctx: *mut RedisModuleCtx, name: &CStr) -> bool {
    let Some(api) = API.get() else {
        return false;
    };
    // SAFETY: an empty format passes no arguments; ctx is the load context.
    let reply = unsafe { (api.call)(ctx, name.as_ptr(), c"".as_ptr()) };
    if !reply.is_null() {
        // A command that takes no arguments ran: it is there.
        // SAFETY: freed exactly once, not used afterwards.
        unsafe { (api.free_call_reply)(reply) };
        return true;
    }
    std::io::Error::last_os_error().raw_os_error() == Some(libc::EINVAL)
}

/// Whether `name` is a server command's original name, renamed or not (only `ACL CAT` lists those):
/// `RedisModule_CreateCommand` under one crashes the server. `None` where ACL CAT can't be read.
pub fn original_command_name(ctx: *mut RedisModuleCtx, name: &str) -> Option<bool> {
    let ctx = Ctx::of(ctx)?;
    let CallValue::Array(categories) = ctx.call(c"ACL", &[b"CAT"])? else {
        return None;
    };
    for category in categories {
        let CallValue::Text(category) = category else {
            return None;
        };
        let CallValue::Array(commands) = ctx.call(c"ACL", &[b"CAT", &category])? else {
            return None;
        };
        let listed = commands.iter().any(|command| {
            matches!(command, CallValue::Text(command) if command.eq_ignore_ascii_case(name.as_bytes()))
        });
        if listed {
            return Some(true);
        }
    }
    Some(false)
}
