//! The module ACL API (Redis 7.0+): the user a call runs as, whether that user may run a command
//! (`RedisModule_ACLCheckCommandPermissions`: the command, its keys, every selector), and the ACL
//! log.

use libc::c_int;
use redis_module::raw::{self, RedisModuleString, RedisModuleUser};

use super::api::{Api, API, OK};
use super::ctx::{Arg, Ctx, OwnedString};

/// Who a call runs as, for the module's own permission checks.
pub enum Caller<'c> {
    /// No user: the replication link, AOF loading, another module's call without `C`. The server
    /// lets such a client run anything (as Redis 7.2 does for MSETEX).
    Unrestricted,
    User(AclUser<'c>),
    /// The API is missing or the user was deleted meanwhile: every check refuses.
    Unknown,
}

/// A user's permissions, for as long as the call runs; freed on drop.
pub struct AclUser<'c> {
    ctx: &'c Ctx<'c>,
    user: *mut RedisModuleUser,
    check: unsafe extern "C" fn(*mut RedisModuleUser, *mut *mut RedisModuleString, c_int) -> c_int,
    free: unsafe extern "C" fn(*mut RedisModuleUser),
    /// The argument vector of the last check, reused.
    argv: Vec<*mut RedisModuleString>,
}

/// Why a refusal is logged: the command itself, or a key it names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogReason {
    Command,
    Key,
}

impl<'c> Ctx<'c> {
    /// The user this call runs as.
    pub fn caller(&'c self) -> Caller<'c> {
        let api = self.api;
        let (Some(from_name), Some(check), Some(free)) = (
            api.get_module_user_from_user_name,
            api.acl_check_command_permissions,
            api.free_module_user,
        ) else {
            return Caller::Unknown;
        };
        let name = match self.caller_name() {
            Ok(Some(name)) => name,
            Ok(None) => return Caller::Unrestricted,
            Err(()) => return Caller::Unknown,
        };
        // SAFETY: name is a live string; the user (or NULL) is ours to free.
        let user = unsafe { from_name(name.ptr) };
        if user.is_null() {
            return Caller::Unknown; // deleted meanwhile
        }
        Caller::User(AclUser {
            ctx: self,
            user,
            check,
            free,
            argv: Vec::new(),
        })
    }

    /// The calling client's user name; `None` without one (unrestricted, as on Redis 7.2).
    fn caller_name(&self) -> Result<Option<OwnedString>, ()> {
        let api = self.api;
        let by_id = api.get_client_user_name_by_id.ok_or(())?;
        // SAFETY: ctx is the live command context.
        let id = unsafe { (api.get_client_id)(self.raw) };
        clear_errno();
        // SAFETY: the returned string (or NULL) is ours to free.
        let name = OwnedString::new(unsafe { by_id(self.raw, id) }, api);
        if name.is_some() || errno() == Some(libc::ENOTSUP) {
            return Ok(name); // ENOTSUP: a client in the index without a user
        }
        // Not in the client index: a script's client or an RM_Call client, with a user or not
        // (asking a user-less client for its user's name crashes 7.0).
        if !self.client_has_user()? {
            return Ok(None);
        }
        let current = api.get_current_user_name.ok_or(())?;
        // SAFETY: the client has a user (checked above); the string is ours to free.
        OwnedString::new(unsafe { current(self.raw) }, api)
            .map(Some)
            .ok_or(())
    }

    /// Whether this context's client has an ACL user: `RedisModule_Call` with `C` (run as that
    /// user) and an invalid format answers ENOTSUP without a user and EBADF with one, before it
    /// looks the command up: nothing runs. Any other answer: unknown.
    fn client_has_user(&self) -> Result<bool, ()> {
        clear_errno();
        // SAFETY: the format has no argument specifiers ('#' ends it as invalid); the reply, if
        // any, is ours to free.
        let reply = unsafe { (self.api.call)(self.raw, c"PING".as_ptr(), c"C#".as_ptr()) };
        if !reply.is_null() {
            // SAFETY: freed exactly once, not used afterwards.
            unsafe { (self.api.free_call_reply)(reply) };
            return Err(());
        }
        match errno() {
            Some(libc::ENOTSUP) => Ok(false),
            Some(libc::EBADF) => Ok(true),
            _ => Err(()),
        }
    }
}

impl AclUser<'_> {
    /// Whether the user may run the command `parts` make, concatenated (the name first), as the
    /// server would check it: the command, its keys with their access flags, in one selector. A
    /// command the server does not know under that name (renamed away) is refused.
    pub fn allows(&mut self, parts: &[&[Arg<'_>]]) -> bool {
        self.argv.clear();
        for part in parts {
            self.argv.extend(part.iter().map(|arg| arg.ptr));
        }
        let Ok(argc) = c_int::try_from(self.argv.len()) else {
            return false;
        };
        // SAFETY: user is live; argv holds argc live strings, which the check only reads.
        unsafe { (self.check)(self.user, self.argv.as_mut_ptr(), argc) == OK }
    }

    /// Adds an ACL LOG entry for this user, as the server logs its own refusals.
    pub fn log_refusal(&self, object: Arg<'_>, reason: LogReason) {
        let Some(add_entry) = self.ctx.api.acl_add_log_entry else {
            return;
        };
        let reason = match reason {
            LogReason::Command => raw::RedisModuleACLLogEntryReason_REDISMODULE_ACL_LOG_CMD,
            LogReason::Key => raw::RedisModuleACLLogEntryReason_REDISMODULE_ACL_LOG_KEY,
        };
        // SAFETY: ctx, user and object are live; the server copies them.
        unsafe { add_entry(self.ctx.raw, self.user, object.ptr, reason) };
    }
}

impl Drop for AclUser<'_> {
    fn drop(&mut self) {
        // SAFETY: obtained from GetModuleUserFromUserName; freed exactly once.
        unsafe { (self.free)(self.user) };
    }
}

fn clear_errno() {
    // SAFETY: errno is this thread's; writing it has no other effect.
    unsafe { *libc::__errno_location() = 0 };
}

fn errno() -> Option<i32> {
    std::io::Error::last_os_error()
        .raw_os_error()
        .filter(|n| *n != 0)
}

/// Whether the module API can check a user's permission to run a command (Redis 7.0+).
pub fn acl_check_available() -> bool {
    API.get().is_some_and(|api: &Api| {
        api.get_current_user_name.is_some()
            && api.get_module_user_from_user_name.is_some()
            && api.acl_check_command_permissions.is_some()
            && api.free_module_user.is_some()
            && api.get_client_user_name_by_id.is_some()
    })
}
