//! The approvals page's keyboard: `j`/`k` move between cards, `a`
//! approves the selected card (as its button would: not while its JSON is
//! invalid), `r` goes to its reason field (a rejection needs a reason; Enter
//! there rejects). Keys typed into a field are the field's. Browser only:
//! installed from an Effect, it drives the cards through the DOM, so the
//! rendered view is the same on the server and at hydration.

/// Where the selection goes for `key` among `len` cards, from `at`.
#[cfg_attr(not(feature = "hydrate"), allow(dead_code))]
pub fn next_index(key: &str, at: Option<usize>, len: usize) -> Option<usize> {
    if len == 0 {
        return None;
    }
    let last = len - 1;
    Some(match (key, at) {
        ("j", None) | ("k", None) => 0,
        ("j", Some(i)) => (i + 1).min(last),
        ("k", Some(i)) => i.min(last).saturating_sub(1),
        (_, None) => 0,
        (_, Some(i)) => i.min(last),
    })
}

/// Listens on the window until the calling Effect is cleaned up.
#[cfg(feature = "hydrate")]
pub fn install() {
    use leptos::prelude::*;
    use wasm_bindgen::JsCast;

    let selected = StoredValue::new_local(None::<usize>);
    let handle = window_event_listener(leptos::ev::keydown, move |e| {
        if e.ctrl_key() || e.meta_key() || e.alt_key() || typing(&e) {
            return;
        }
        let key = e.key();
        if !matches!(key.as_str(), "j" | "k" | "a" | "r") {
            return;
        }
        let cards = cards();
        let Some(i) = next_index(&key, selected.get_value(), cards.len()) else {
            return;
        };
        e.prevent_default();
        selected.set_value(Some(i));
        for (n, card) in cards.iter().enumerate() {
            let _ = card.set_attribute("data-selected", if n == i { "true" } else { "false" });
        }
        let card = &cards[i];
        let part = |testid: &str| {
            card.query_selector(&format!("[data-testid={testid}]"))
                .ok()
                .flatten()
                .and_then(|el| el.dyn_into::<web_sys::HtmlElement>().ok())
        };
        match key.as_str() {
            "a" => {
                if let Some(button) = part("approve") {
                    button.click();
                }
            }
            "r" => {
                if let Some(input) = part("reject-reason") {
                    let _ = input.focus();
                }
            }
            _ => {
                if let Ok(el) = card.clone().dyn_into::<web_sys::HtmlElement>() {
                    let _ = el.focus();
                }
                card.scroll_into_view();
            }
        }
    });
    on_cleanup(move || handle.remove());
}

#[cfg(feature = "hydrate")]
fn typing(e: &web_sys::KeyboardEvent) -> bool {
    use wasm_bindgen::JsCast;
    e.target()
        .and_then(|t| t.dyn_into::<web_sys::HtmlElement>().ok())
        .is_some_and(|el| {
            matches!(el.tag_name().as_str(), "INPUT" | "TEXTAREA" | "SELECT")
                || el.is_content_editable()
        })
}

#[cfg(feature = "hydrate")]
fn cards() -> Vec<web_sys::Element> {
    use wasm_bindgen::JsCast;
    let Ok(list) = leptos::prelude::document().query_selector_all("[data-testid=approval-card]")
    else {
        return Vec::new();
    };
    (0..list.length())
        .filter_map(|i| list.get(i))
        .filter_map(|node| node.dyn_into::<web_sys::Element>().ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::next_index;

    #[test]
    fn j_and_k_stay_within_the_cards() {
        assert_eq!(next_index("j", None, 0), None);
        assert_eq!(next_index("j", None, 3), Some(0));
        assert_eq!(next_index("j", Some(0), 3), Some(1));
        assert_eq!(next_index("j", Some(2), 3), Some(2));
        assert_eq!(next_index("k", Some(2), 3), Some(1));
        assert_eq!(next_index("k", Some(0), 3), Some(0));
        // A card was decided and left: the selection stays in range.
        assert_eq!(next_index("a", Some(5), 2), Some(1));
        assert_eq!(next_index("r", None, 2), Some(0));
    }
}
