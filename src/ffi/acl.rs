//! The ACL API (Redis 7.0+): a call's user, whether it may run a command, the ACL log.

use libc::c_int;
use redis_module::raw::{self, RedisModuleString, RedisModuleUser};

use super::api::{API, OK};
use super::call::{clear_errno, errno, CallReply};
use super::ctx::{Arg, Ctx, OwnedString};

pub enum Caller<'c> {
    /// No user (the replication link, AOF loading, a module's call without `C`): may run anything.
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
    argv: Vec<*mut RedisModuleString>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogReason {
    Command,
    Key,
}

impl<'c> Caller<'c> {
    pub fn of(ctx: &'c Ctx<'c>) -> Caller<'c> {
        let (Some(from_name), Some(check), Some(free)) = (
            ctx.api.get_module_user_from_user_name,
            ctx.api.acl_check_command_permissions,
            ctx.api.free_module_user,
        ) else {
            return Caller::Unknown;
        };
        let name = match caller_name(ctx) {
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
            ctx,
            user,
            check,
            free,
            argv: Vec::new(),
        })
    }
}

/// The calling client's user name; `None` without one (unrestricted, as on Redis 7.2).
fn caller_name(ctx: &Ctx<'_>) -> Result<Option<OwnedString>, ()> {
    let api = ctx.api;
    let by_id = api.get_client_user_name_by_id.ok_or(())?;
    // SAFETY: ctx is the live command context.
    let id = unsafe { (api.get_client_id)(ctx.raw) };
    clear_errno();
    // SAFETY: the returned string (or NULL) is ours to free.
    let name = OwnedString::new(unsafe { by_id(ctx.raw, id) }, api);
    if name.is_some() || errno() == Some(libc::ENOTSUP) {
        return Ok(name); // ENOTSUP: a client in the index without a user
    }
    // Not in the client index (a script's, an RM_Call's): asking one without a user crashes 7.0.
    if !client_has_user(ctx)? {
        return Ok(None);
    }
    let current = api.get_current_user_name.ok_or(())?;
    // SAFETY: the client has a user (checked above); the string is ours to free.
    OwnedString::new(unsafe { current(ctx.raw) }, api)
        .map(Some)
        .ok_or(())
}

/// Whether `ctx`'s client has a user: `RedisModule_Call` with `C` and an invalid format fails,
/// running nothing, with ENOTSUP without one and EBADF with one (else: unknown).
fn client_has_user(ctx: &Ctx<'_>) -> Result<bool, ()> {
    clear_errno();
    // SAFETY: the format has no argument specifiers ('#' ends it as invalid); a reply is ours.
    let reply = unsafe { (ctx.api.call)(ctx.raw, c"PING".as_ptr(), c"C#".as_ptr()) };
    if CallReply::new(reply, ctx.api).is_some() {
        return Err(());
    }
    match errno() {
        Some(libc::ENOTSUP) => Ok(false),
        Some(libc::EBADF) => Ok(true),
        _ => Err(()),
    }
}

impl AclUser<'_> {
    /// Whether the user may run the command `parts` make (name first) as the server checks it,
    /// keys and all, in one selector (a renamed-away name is refused).
    pub fn allows(&mut self, parts: &[&[Arg<'_>]]) -> bool {
        self.argv.clear();
        // Part by part: no per-item capacity check (a flattened iterator's cost as much per key as
        // the server's command lookup).
        for part in parts {
            self.argv.extend(part.iter().map(|arg| arg.ptr));
        }
        let Ok(argc) = c_int::try_from(self.argv.len()) else {
            return false;
        };
        // SAFETY: user is live; argv holds argc live strings, which the check only reads.
        unsafe { (self.check)(self.user, self.argv.as_mut_ptr(), argc) == OK }
    }

    /// [`AclUser::allows`] for `command key value tail...` of every pair, in one argv; the first
    /// key refused, if any.
    pub fn allows_each_pair<'a>(
        &mut self,
        command: Arg<'a>,
        pairs: &[Arg<'a>],
        tail: &[Arg<'a>],
    ) -> Result<(), Arg<'a>> {
        let Some(first) = pairs.first() else {
            return Ok(());
        };
        self.argv.clear();
        self.argv.extend([command.ptr, first.ptr, first.ptr]);
        self.argv.extend(tail.iter().map(|arg| arg.ptr));
        let Ok(argc) = c_int::try_from(self.argv.len()) else {
            return Err(*first);
        };
        for pair in pairs.chunks_exact(2) {
            let [key, value] = pair else { continue };
            if let Some([key_slot, value_slot]) = self.argv.get_mut(1..3) {
                *key_slot = key.ptr;
                *value_slot = value.ptr;
            }
            // SAFETY: user is live; argv holds argc live strings, which the check only reads.
            if unsafe { (self.check)(self.user, self.argv.as_mut_ptr(), argc) } != OK {
                return Err(*key);
            }
        }
        Ok(())
    }

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

/// Whether the module API can put a module command in ACL categories (Redis 7.2+, Valkey).
pub fn acl_categories_available() -> bool {
    API.get()
        .is_some_and(|api| api.set_command_acl_categories.is_some() && api.get_command.is_some())
}

/// Whether the module API can check a user's permission to run a command (Redis 7.0+).
pub fn acl_check_available() -> bool {
    API.get().is_some_and(|api| {
        api.get_current_user_name.is_some()
            && api.get_module_user_from_user_name.is_some()
            && api.acl_check_command_permissions.is_some()
            && api.free_module_user.is_some()
            && api.get_client_user_name_by_id.is_some()
    })
}
