//! The one state struct every handler shares.

use axum::extract::FromRef;
use leptos::config::LeptosOptions;

use crate::hub::Hub;

#[derive(Clone, FromRef)]
pub struct AppState {
    pub leptos_options: LeptosOptions,
    pub hub: Hub,
}

impl AppState {
    pub fn new(leptos_options: LeptosOptions) -> Self {
        Self {
            leptos_options,
            hub: Hub::default(),
        }
    }
}
