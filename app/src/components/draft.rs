//! A text box and its draft: the page's `draft` signal owns the text, and
//! the box is not bound to it by a property. Hydration would reset a bound
//! box and lose what was typed before the page's script ran (a person can
//! type into the server's HTML; a lazy page's script may come later
//! still). So what was typed is adopted as the draft when the script takes
//! the box over, and the draft is written back into the box only when the
//! page changes it (cleared on send, given back on failure). Used by the
//! console's composer and the customer's page.

use leptos::html::Textarea;
use leptos::prelude::*;

/// Keeps `draft` and the box `el` in step (browser only); `on_adopted`
/// runs once, when the page's script has taken the box over.
pub fn keep_draft(draft: RwSignal<String>, el: NodeRef<Textarea>, on_adopted: impl Fn() + 'static) {
    let adopted = StoredValue::new(false);
    Effect::new(move |_| {
        let text = draft.get();
        let Some(el) = el.get() else {
            return;
        };
        if !adopted.get_value() {
            adopted.set_value(true);
            on_adopted();
            // What was typed before the page's script ran.
            let typed = el.value();
            if text.is_empty() && !typed.is_empty() {
                draft.set(typed);
                return;
            }
        }
        if el.value() != text {
            el.set_value(&text);
        }
    });
}
