//! The module ACL API: whether the calling user may run a command.

use std::ffi::CStr;

use libc::c_int;
use redis_module::raw::{self, RedisModuleString};

use super::ctx::{Arg, Ctx, OwnedString};
use super::{API, OK};

/// What the module ACL API says about the calling user and one call: denied for the command
/// itself, or only for the keys (a selector allows the command, none the keys).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AclVerdict {
    Allowed,
    DeniedCommand,
    DeniedKey,
}

impl<'call> Ctx<'call> {
    /// Whether the caller's user may run `command` (MSET) with `pairs`, the command and every key
    /// in one selector, as the server checks (Redis 7.0+), and each of `others` (name, how many
    /// arguments follow the key) on the first key. A refusal goes to the ACL log as the server's
    /// (reason `command` with `logged`, or `key` with the first key the user can't write).
    /// Clients without a user may run anything; a missing API or failed check is a refusal.
    pub fn may_run(
        &self,
        command: &CStr,
        others: &[(&CStr, usize)],
        pairs: &[Arg<'call>],
        logged: &CStr,
    ) -> AclVerdict {
        let api = self.api;
        let (Some(from_name), Some(check), Some(free_user)) = (
            api.get_module_user_from_user_name,
            api.acl_check_command_permissions,
            api.free_module_user,
        ) else {
            return AclVerdict::DeniedCommand;
        };
        let Some(name) = self.caller_name() else {
            return AclVerdict::Allowed;
        };
        let (Some(command), Some(key), Some(value)) =
            (self.string(command.to_bytes()), pairs.first(), pairs.get(1))
        else {
            return AclVerdict::DeniedCommand;
        };
        // SAFETY: name is a live string; the user (or NULL) is ours to free.
        let user = unsafe { from_name(name.ptr) };
        if user.is_null() {
            return AclVerdict::DeniedCommand; // the user was deleted meanwhile
        }
        let run = |argv: &mut [*mut RedisModuleString]| {
            let argc = c_int::try_from(argv.len()).unwrap_or(0);
            // SAFETY: user is live; argv holds argc live strings, which the check only reads.
            unsafe { check(user, argv.as_mut_ptr(), argc) == OK }
        };
        let mut argv = Vec::with_capacity(1 + pairs.len());
        argv.push(command.ptr);
        argv.extend(pairs.iter().map(|arg| arg.ptr));
        let verdict = if run(&mut argv) {
            if others
                .iter()
                .all(|other| self.other_allowed(&run, *other, key, value))
            {
                AclVerdict::Allowed
            } else {
                AclVerdict::DeniedCommand
            }
        } else if !run(&mut argv[..1]) {
            AclVerdict::DeniedCommand
        } else {
            AclVerdict::DeniedKey
        };
        self.log_refusal(user, verdict, pairs, logged);
        // SAFETY: freed exactly once, not used afterwards.
        unsafe { free_user(user) };
        verdict
    }

    /// `other` on the call's first key, which the user may write by now (a command renamed away,
    /// ENOENT, is no rule's); the call's strings fill its other arguments.
    fn other_allowed(
        &self,
        run: &impl Fn(&mut [*mut RedisModuleString]) -> bool,
        (other, after_key): (&CStr, usize),
        key: &Arg<'call>,
        value: &Arg<'call>,
    ) -> bool {
        let Some(other) = self.string(other.to_bytes()) else {
            return false;
        };
        let mut argv = [other.ptr, key.ptr, value.ptr, value.ptr];
        let len = (2 + after_key).min(argv.len());
        run(&mut argv[..len]) || errno() == Some(libc::ENOENT)
    }

    fn log_refusal(
        &self,
        user: *mut raw::RedisModuleUser,
        verdict: AclVerdict,
        pairs: &[Arg<'call>],
        logged: &CStr,
    ) {
        let api = self.api;
        let writable = |key: &Arg<'call>| {
            api.acl_check_key_permissions.is_none_or(|check_key| {
                // SAFETY: user and key are live.
                unsafe { check_key(user, key.ptr, raw::REDISMODULE_CMD_KEY_UPDATE as c_int) == OK }
            })
        };
        let logged = self.string(logged.to_bytes());
        let entry = match verdict {
            AclVerdict::Allowed => None,
            AclVerdict::DeniedCommand => logged.as_ref().map(|name| {
                (
                    name.ptr,
                    raw::RedisModuleACLLogEntryReason_REDISMODULE_ACL_LOG_CMD,
                )
            }),
            AclVerdict::DeniedKey => pairs
                .iter()
                .step_by(2)
                .find(|key| !writable(key))
                .or(pairs.first())
                .map(|key| {
                    (
                        key.ptr,
                        raw::RedisModuleACLLogEntryReason_REDISMODULE_ACL_LOG_KEY,
                    )
                }),
        };
        if let (Some(add_entry), Some((object, reason))) = (api.acl_add_log_entry, entry) {
            // SAFETY: ctx, user and object are live; the server copies them.
            unsafe { add_entry(self.raw, user, object, reason) };
        }
    }

    /// The calling client's user name; `None` without one (the replication link, another module's
    /// RM_Call without `C`: unrestricted, as on Redis 7.2) or the API.
    fn caller_name(&self) -> Option<OwnedString> {
        let api = self.api;
        let by_id = api.get_client_user_name_by_id?;
        // SAFETY: ctx is the live command context.
        let id = unsafe { (api.get_client_id)(self.raw) };
        // SAFETY: the returned string (or NULL) is ours to free.
        let name = OwnedString::new(unsafe { by_id(self.raw, id) }, api);
        if name.is_some() || errno() == Some(libc::ENOTSUP) {
            return name;
        }
        // Not in the client index: a script's client or an RM_Call client, with a user or not
        // (asking a user-less client for its user's name crashes 7.0).
        if !self.client_has_user() {
            return None;
        }
        let current = api.get_current_user_name?;
        // SAFETY: the client has a user (checked above); the string is ours to free.
        OwnedString::new(unsafe { current(self.raw) }, api)
    }

    /// Whether this context's client has an ACL user: `RedisModule_Call` with `C` (run as that
    /// user) and an invalid format answers ENOTSUP without a user and EBADF with one, before it
    /// looks the command up: nothing runs.
    fn client_has_user(&self) -> bool {
        // SAFETY: the format has no argument specifiers ('#' ends it as invalid); the reply, if
        // any, is ours to free.
        let reply = unsafe { (self.api.call)(self.raw, c"PING".as_ptr(), c"C#".as_ptr()) };
        if reply.is_null() {
            return errno() != Some(libc::ENOTSUP);
        }
        // SAFETY: freed exactly once, not used afterwards.
        unsafe { (self.api.free_call_reply)(reply) };
        true
    }
}

fn errno() -> Option<i32> {
    std::io::Error::last_os_error().raw_os_error()
}

/// Whether the module API can check a user's permission to run a command (Redis 7.0+).
pub fn acl_check_available() -> bool {
    API.get().is_some_and(|api| {
        api.get_current_user_name.is_some()
            && api.get_module_user_from_user_name.is_some()
            && api.acl_check_command_permissions.is_some()
            && api.free_module_user.is_some()
    })
}
