//! The module ACL API: whether the calling user may run a command.

use std::ffi::CStr;

use libc::c_int;
use redis_module::raw::{self, RedisModuleString};

use super::ctx::{Arg, Ctx, OwnedString};
use super::{API, OK};

/// What the module ACL API says about the calling user and one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AclVerdict {
    Allowed,
    /// No selector allows the command itself.
    DeniedCommand,
    /// A selector allows the command, none the keys: the index of the key
    /// reported (the first one no selector lets the user write).
    DeniedKey(usize),
}

impl<'call> Ctx<'call> {
    /// Whether the calling client's user may run the command `args` (all of
    /// it: the command and every key, in one selector, as the server checks
    /// it), through the module ACL API (Redis 7.0+). A refusal is written to
    /// the ACL log (reason `command`, or `key` with the first key in `keys`
    /// that no selector lets the user write), as the server's own. Clients
    /// without a user (the replication link, another module's RM_Call) may
    /// run anything, as for the server; so does every client where the API
    /// is missing (the caller only asks where it exists).
    pub fn acl_verdict(
        &self,
        command: &CStr,
        args: &[Arg<'call>],
        keys: &[Arg<'call>],
    ) -> AclVerdict {
        let api = self.api;
        let (Some(from_name), Some(check), Some(free_user)) = (
            api.get_module_user_from_user_name,
            api.acl_check_command_permissions,
            api.free_module_user,
        ) else {
            return AclVerdict::Allowed;
        };
        let Some(name) = self.caller_name() else {
            return AclVerdict::Allowed;
        };
        // SAFETY: name is a live string; the user (or NULL) is ours to free.
        let user = unsafe { from_name(name.ptr) };
        if user.is_null() {
            return AclVerdict::DeniedCommand; // the user was deleted meanwhile
        }
        let run = |argv: &[Arg<'call>]| {
            let mut ptrs: Vec<*mut RedisModuleString> = argv.iter().map(|a| a.ptr).collect();
            let argc = c_int::try_from(ptrs.len()).unwrap_or(0);
            // SAFETY: user is live; ptrs holds argc live strings.
            unsafe { check(user, ptrs.as_mut_ptr(), argc) == OK }
        };
        let verdict = if run(args) {
            AclVerdict::Allowed
        } else if !run(args.get(..1).unwrap_or_default()) {
            AclVerdict::DeniedCommand
        } else {
            let writable = |key: &Arg<'call>| {
                api.acl_check_key_permissions.is_none_or(|check_key| {
                    // SAFETY: user and key are live.
                    unsafe {
                        check_key(user, key.ptr, raw::REDISMODULE_CMD_KEY_UPDATE as c_int) == OK
                    }
                })
            };
            let index = keys.iter().position(|k| !writable(k)).unwrap_or(0);
            AclVerdict::DeniedKey(index)
        };
        // The command as the server names it (not as the client typed it).
        let name = self.string(command.to_bytes());
        let object = match verdict {
            AclVerdict::Allowed => None,
            AclVerdict::DeniedCommand => name.as_ref().map(|n| {
                (
                    n.ptr,
                    raw::RedisModuleACLLogEntryReason_REDISMODULE_ACL_LOG_CMD,
                )
            }),
            AclVerdict::DeniedKey(index) => keys.get(index).map(|k| {
                (
                    k.ptr,
                    raw::RedisModuleACLLogEntryReason_REDISMODULE_ACL_LOG_KEY,
                )
            }),
        };
        if let (Some(add_entry), Some((object, reason))) = (api.acl_add_log_entry, object) {
            // SAFETY: ctx, user and object are live; the server copies them.
            unsafe { add_entry(self.raw, user, object, reason) };
        }
        // SAFETY: freed exactly once, not used afterwards.
        unsafe { free_user(user) };
        verdict
    }
}

impl<'call> Ctx<'call> {
    /// The name of the calling client's user; `None` for a client without
    /// one (the replication link, another module's RM_Call) or where the
    /// API is missing.
    fn caller_name(&self) -> Option<OwnedString> {
        let api = self.api;
        let by_id = api.get_client_user_name_by_id?;
        // SAFETY: ctx is the live command context.
        let id = unsafe { (api.get_client_id)(self.raw) };
        // SAFETY: the returned string (or NULL) is ours to free.
        let name = OwnedString::new(unsafe { by_id(self.raw, id) }, api);
        if name.is_some() {
            return name;
        }
        let no_user = std::io::Error::last_os_error().raw_os_error() == Some(libc::ENOTSUP);
        let script = self.flags_raw() & raw::REDISMODULE_CTX_FLAGS_LUA as c_int != 0;
        // A script's client is not in the client index, but it has the
        // user of the client that runs the script; an RM_Call client has
        // none (asking for its user's name would crash 7.0).
        if no_user || !script {
            return None;
        }
        let current = api.get_current_user_name?;
        // SAFETY: a script client has a user; the string is ours to free.
        OwnedString::new(unsafe { current(self.raw) }, api)
    }

    /// The calling client's user name, as [`Ctx::caller_name`].
    pub fn caller_user_name(&self) -> Option<Vec<u8>> {
        let name = self.caller_name()?;
        let mut len = 0usize;
        // SAFETY: name is a live string; the bytes are copied before it is freed.
        let data = unsafe { (self.api.string_ptr_len)(name.ptr, &mut len) };
        if data.is_null() {
            return Some(Vec::new());
        }
        // SAFETY: data points at len readable bytes owned by name (live).
        Some(unsafe { std::slice::from_raw_parts(data.cast::<u8>(), len) }.to_vec())
    }
}

/// What the server's module API offers for checking a user's permission
/// to run a command (Redis 7.0+).
pub fn acl_check_available() -> bool {
    API.get().is_some_and(|api| {
        api.get_current_user_name.is_some()
            && api.get_module_user_from_user_name.is_some()
            && api.acl_check_command_permissions.is_some()
            && api.free_module_user.is_some()
    })
}
