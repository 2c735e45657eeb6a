//! The types aics shares between the engine, the server and the WASM client.
//!
//! One definition of each: the server serialises them to JSON (camelCase field
//! names, as docs/API.md documents them) and the browser deserialises the
//! very same structs. This crate depends on serde only, so it compiles for
//! `wasm32-unknown-unknown` as well as for the server.
//!
//! # Layout
//! - [`trace`]: the record of one chat turn ([`ChatTurnTraceResult`],
//!   [`ToolCallRecord`], [`TokenUsage`], [`Intent`], [`StopReason`]).
//! - [`diff`]: what changed in a turn's state between two checkpoints.
//! - [`overview`]: the supervisors' overview (turns, tools, approvals,
//!   latency, tokens and cost per day).
//! - [`studio`]: forks of a turn ([`StudioRun`]) and how a fork compares
//!   with its original (tool chain, word diff of the reply, deltas).
//! - [`providers`]: the configured model providers and whether each was
//!   reachable ([`ProviderInfo`]).
//! - [`replays`]: replay sets of turns, their replay runs and the summary
//!   of what changed ([`replay_item`]).
//! - [`event`]: what a running turn reports as it goes ([`AgentEvent`]).
//! - [`console`]: what the console shows besides traces: conversations,
//!   messages, approvals, checkpoints, users, API errors.
//! - [`customers`]: the customer panel (profile, orders, tickets, past
//!   conversations, remembered facts).
//! - [`handling`]: who handles a conversation, the table of allowed
//!   handling transitions, and the customer channel's view.
//! - [`accounts`]: named accounts, the audit log, and the rules for
//!   usernames, new passwords, free text (no control characters) and names
//!   (no invisible or text-direction characters either).
//! - [`commerce`]: the shop's data the tools read and write: customers,
//!   orders, logistics events, tickets, knowledge articles.
//! - [`shared`]: [`SharedValue`], a JSON value many owners hold at once
//!   (a tool call's arguments and result).
//! - [`timestamp`]: how a [`Timestamp`] field is read back from JSON.
//! - [`json`]: how the browser reads JSON ([`json::from_str`]: structs
//!   from objects only, which keeps each struct's decoder compiled once).
#![forbid(unsafe_code)]

pub mod accounts;
pub mod commerce;
pub mod console;
pub mod customers;
pub mod diff;
pub mod event;
pub mod handling;
pub mod json;
pub mod overview;
pub mod providers;
pub mod replays;
pub mod shared;
pub mod studio;
pub mod timestamp;
pub mod trace;

pub use accounts::*;
pub use commerce::*;
pub use console::*;
pub use customers::*;
pub use diff::*;
pub use event::*;
pub use handling::*;
pub use overview::*;
pub use providers::*;
pub use replays::*;
pub use shared::SharedValue;
pub use studio::*;
pub use trace::*;

/// A point in time, always UTC, serialised as RFC 3339.
///
/// A field of this type (or `Option` of it) is read with
/// `#[serde(deserialize_with = "crate::timestamp::deserialize")]`
/// ([`timestamp::option`] for an `Option`), not chrono's own
/// `Deserialize`: see [`timestamp`] for why.
pub type Timestamp = chrono::DateTime<chrono::Utc>;
