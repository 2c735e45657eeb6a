//! One folder per page: its components, and the server functions only it
//! calls (`api.rs`).

pub mod account;
pub mod accounts;
pub mod approvals;
pub mod chat;
pub mod console;
pub mod login;
pub mod overview;
pub mod replays;
pub mod turn;
