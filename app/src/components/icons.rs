//! Inline SVG icons. They draw in the text colour and need no icon font, so
//! they look the same in every browser and with every installed font (an
//! emoji or a symbol glyph renders as an empty box where the font lacks it).

use leptos::prelude::*;

/// Which icon to draw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IconKind {
    Plus,
    /// A speech bubble: conversations.
    Chat,
    /// An exclamation mark in a circle: errors and calls that wait.
    Alert,
    ArrowLeft,
    ArrowRight,
    /// A small chevron between the nodes of a path.
    Chevron,
    Copy,
    Check,
}

impl IconKind {
    /// The outline, on a 24×24 grid, drawn with a 2px round stroke.
    fn path(self) -> &'static str {
        match self {
            Self::Plus => "M12 5v14M5 12h14",
            Self::Chat => "M5 5h14a1 1 0 0 1 1 1v9a1 1 0 0 1-1 1h-9l-4 3.5V16H5a1 1 0 0 1-1-1V6a1 1 0 0 1 1-1zM8 9.5h8M8 12.5h5",
            Self::Alert => "M12 3a9 9 0 1 0 0 18a9 9 0 1 0 0-18zM12 7.5v5.5M12 16.5v.01",
            Self::ArrowLeft => "M19 12H5M11 6l-6 6 6 6",
            Self::ArrowRight => "M5 12h14M13 6l6 6-6 6",
            Self::Chevron => "M9 6l6 6-6 6",
            Self::Copy => "M9 9h10v10H9zM5 15V5h10",
            Self::Check => "M5 12.5l4.5 4.5L19 7.5",
        }
    }
}

/// An icon, hidden from screen readers: the text next to it says what it
/// means. `class` sets its size (it defaults to the text's size).
#[component]
pub fn Icon(kind: IconKind, #[prop(optional)] class: &'static str) -> impl IntoView {
    let class = if class.is_empty() {
        "inline-block h-[1em] w-[1em] shrink-0"
    } else {
        class
    };
    view! {
        <svg
            class=class
            viewBox="0 0 24 24"
            fill="none"
            stroke="currentColor"
            stroke-width="2"
            stroke-linecap="round"
            stroke-linejoin="round"
            aria-hidden="true"
            focusable="false"
            data-icon=format!("{kind:?}").to_ascii_lowercase()
        >
            <path d=kind.path()></path>
        </svg>
    }
}
