//! What MSETEX sends to replicas, the AOF and slot migrations (DESIGN.md, "Replication").

pub mod apply;
mod listeners;
mod modes;
mod wire;

pub use listeners::{
    is_replication_handshake, listeners_label, nobody_listens, on_cron, on_listener_may_appear,
    on_slot_export, set_watching, ReplicationInfo, PROBED_FIELDS,
};
#[cfg(test)]
pub use modes::CallForm;
pub use modes::{Replicate, Replication, Sent};
#[cfg(test)]
pub use wire::Link;
pub use wire::{count_changes, CtxLink, Wire};
