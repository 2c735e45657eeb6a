//! The UI atoms every page shares, each defined once.

pub mod badges;
#[cfg(feature = "hydrate")]
pub mod draft;
pub mod errors;
pub mod icons;
pub mod json;
pub mod layout;
pub mod lazy;
pub mod live_dot;
pub mod markdown;
pub mod poll;
pub mod server_form;
pub mod time;
pub mod timeline;
pub mod trace;
