//! The optional sound of a new approval: a short two-note chime made with
//! the Web Audio API (no file to load). Browsers let a page make sound only
//! after a gesture, so the audio context is made when the supervisor turns
//! the sound on (a click) and kept for the page's life; after a reload with
//! the sound on, it plays once the browser allows (the page was interacted
//! with). The choice is kept in localStorage. Browser only.

use std::cell::RefCell;

use wasm_bindgen::JsValue;
use web_sys::{AudioContext, AudioScheduledSourceNode, OscillatorType};

const KEY: &str = "aics.sound-approvals";

thread_local! {
    static CONTEXT: RefCell<Option<AudioContext>> = const { RefCell::new(None) };
}

fn storage() -> Option<web_sys::Storage> {
    web_sys::window()?.local_storage().ok().flatten()
}

/// Whether the supervisor turned the sound on (in this browser).
pub fn stored() -> bool {
    storage()
        .and_then(|s| s.get_item(KEY).ok().flatten())
        .is_some_and(|v| v == "1")
}

/// Keeps the choice for the next page.
pub fn remember(on: bool) {
    if let Some(s) = storage() {
        let _ = s.set_item(KEY, if on { "1" } else { "0" });
    }
}

/// Makes (or resumes) the audio context; called from the toggle's click.
pub fn unlock() {
    with_context(|ctx| {
        let _ = ctx.resume();
    });
}

/// Plays the chime (silently nothing when the browser has no audio).
pub fn play() {
    with_context(|ctx| {
        let _ = tone(ctx);
    });
}

fn with_context(f: impl FnOnce(&AudioContext)) {
    CONTEXT.with(|cell| {
        let mut cell = cell.borrow_mut();
        if cell.is_none() {
            *cell = AudioContext::new().ok();
        }
        if let Some(ctx) = cell.as_ref() {
            f(ctx);
        }
    });
}

fn tone(ctx: &AudioContext) -> Result<(), JsValue> {
    let oscillator = ctx.create_oscillator()?;
    let gain = ctx.create_gain()?;
    oscillator.set_type(OscillatorType::Sine);
    let now = ctx.current_time();
    oscillator.frequency().set_value_at_time(880.0, now)?;
    oscillator
        .frequency()
        .set_value_at_time(660.0, now + 0.15)?;
    gain.gain().set_value_at_time(0.0001, now)?;
    gain.gain()
        .exponential_ramp_to_value_at_time(0.15, now + 0.02)?;
    gain.gain()
        .exponential_ramp_to_value_at_time(0.0001, now + 0.4)?;
    oscillator.connect_with_audio_node(&gain)?;
    gain.connect_with_audio_node(&ctx.destination())?;
    let source: &AudioScheduledSourceNode = &oscillator;
    source.start()?;
    source.stop_with_when(now + 0.45)?;
    Ok(())
}
