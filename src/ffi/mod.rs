//! The only module with `unsafe`: safe wrappers over the module API, importing only `crate::docs`.

mod acl;
mod api;
mod call;
mod callbacks;
mod ctx;
mod facts;
mod held;

pub use held::held_calls;
mod key;
mod register;
mod sds;

pub use acl::{acl_categories_available, acl_check_available, AclUser, Caller, LogReason};
pub use api::{log, LogLevel, RawCtx, Slot};
pub use call::{fresh_part, Head, Propagation, ServerWrite, Values};
pub use callbacks::{
    on_load, on_unload, ArgsChange, Command, Configs, EverySecond, Hooks, InfoSection, InfoValue,
    Module, Piece, Rewrite,
};
pub use ctx::{Arg, ContextFlags, Ctx, KeyPositions, LazyArg, OwnedString, Reply, Word};
pub use facts::{
    cluster_enabled, command_callable, command_keys, config_number, original_command_name,
    server_info_fields, slot_migrations_listed,
};
pub use key::{Contents, EventClass, Keyspace, OpenKey, Touch};
pub use register::{
    create_command, key_specs_available, register_configs, register_info, set_acl_categories,
    set_command_info, set_module_options, watch,
};
pub use sds::Allocation;
