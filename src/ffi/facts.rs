//! What the server says about itself at load: INFO, configs, cluster mode, commands' names.

use std::ffi::{CStr, CString};

use super::api::{RawCtx, API, OK};
use super::call::{clear_errno, errno, CallReply};
use super::ctx::Ctx;

/// Reads `fields` of the INFO section `section`; missing fields are left out.
pub fn server_info_fields(section: &CStr, fields: &[&'static str]) -> Vec<(&'static str, String)> {
    let Some(api) = API.get() else { return vec![] };
    // SAFETY: a NULL ctx makes the data ours to free; section is NUL-terminated.
    let data = unsafe { (api.get_server_info)(std::ptr::null_mut(), section.as_ptr()) };
    if data.is_null() {
        return vec![];
    }
    let found = fields.iter().filter_map(|field| {
        let name = CString::new(*field).ok()?;
        // SAFETY: data is live until freed below; its returned C string is copied before that.
        let value = unsafe { (api.server_info_get_field_c)(data, name.as_ptr()) };
        // SAFETY: non-null, NUL-terminated, owned by data (still live).
        let value = (!value.is_null()).then(|| unsafe { CStr::from_ptr(value) })?;
        Some((*field, value.to_string_lossy().into_owned()))
    });
    let found = found.collect();
    // SAFETY: data came from GetServerInfo with a NULL ctx and is freed once.
    unsafe { (api.free_server_info)(std::ptr::null_mut(), data) };
    found
}

/// A numeric config, read directly where the server can, else by `CONFIG GET` (may be renamed).
pub fn config_number(ctx: *mut RawCtx, name: &CStr) -> Option<i64> {
    let api = API.get()?;
    if let Some(get_numeric) = api.config_get_numeric {
        let mut value: libc::c_longlong = 0;
        // SAFETY: ctx is the load context; name is NUL-terminated; value is a valid out pointer.
        if unsafe { get_numeric(ctx, name.as_ptr(), &mut value) } == OK {
            return Some(value);
        }
    }
    let reply = Ctx::of(ctx)?.call(c"CONFIG", &[b"GET", name.to_bytes()])?;
    let value = reply.get(1)?.as_deref()?;
    String::from_utf8_lossy(value).trim().parse().ok()
}

pub fn cluster_enabled(ctx: *mut RawCtx) -> bool {
    Ctx::of(ctx).is_some_and(|ctx| ctx.flags().cluster)
}

/// Whether `name` answers (not renamed away): a bare `RedisModule_Call` runs it or fails EINVAL.
pub fn command_callable(ctx: *mut RawCtx, name: &CStr) -> bool {
    API.get().is_some_and(|api| {
        clear_errno();
        // SAFETY: an empty format passes no arguments; ctx is the load context.
        let reply = unsafe { (api.call)(ctx, name.as_ptr(), c"".as_ptr()) };
        CallReply::new(reply, api).is_some() || errno() == Some(libc::EINVAL)
    })
}

/// Whether `name` is a server command's original name, renamed or not; `None` if `ACL CAT` fails.
pub fn original_command_name(ctx: *mut RawCtx, name: &str) -> Option<bool> {
    let ctx = Ctx::of(ctx)?;
    let acl_cat = |args: &[&[u8]]| ctx.call(c"ACL", args);
    let name = name.as_bytes();
    let is_name = |c: &Option<Vec<u8>>| c.as_ref().is_some_and(|c| c.eq_ignore_ascii_case(name));
    for category in acl_cat(&[b"CAT"])? {
        if acl_cat(&[b"CAT", &category?])?.iter().any(is_name) {
            return Some(true);
        }
    }
    Some(false)
}

/// `COMMAND GETKEYS <call>`: the keys the server reads from `call`; `None` if it answered no list.
pub fn command_keys(ctx: *mut RawCtx, call: &[&[u8]]) -> Option<Vec<Vec<u8>>> {
    let args = [&[b"GETKEYS".as_slice()][..], call].concat();
    Ctx::of(ctx)?.call(c"COMMAND", &args)?.into_iter().collect()
}

/// Whether `CLUSTER GETSLOTMIGRATIONS` lists any job (Valkey 9+); `None` if it answered no list.
pub fn slot_migrations_listed(ctx: *mut RawCtx) -> Option<bool> {
    let jobs = Ctx::of(ctx)?.call(c"CLUSTER", &[b"GETSLOTMIGRATIONS"])?;
    Some(!jobs.is_empty())
}
