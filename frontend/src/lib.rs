//! Hydrates the server-rendered console in the browser.
#![forbid(unsafe_code)]
#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    console_error_panic_hook::set_once();
    // Lazy routes (app::lazy_pages): the chunk of the page being hydrated
    // loads before hydration starts.
    leptos::mount::hydrate_lazy(app::App);
}
