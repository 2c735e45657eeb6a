//! Markdown of replies (the AI's and the agents'), rendered to HTML that is
//! safe to insert: raw HTML in the text is shown as text, never run; links
//! keep only `http(s):` and `mailto:` targets and open in a new tab with
//! `rel="noopener noreferrer"`; images become their alt text (no loads from
//! elsewhere).
//!
//! Only the server renders: the server functions that load a conversation
//! or the customer's chat send each stored reply's HTML beside it
//! ([`replies_html`], `aics_types::WithHtml`), so the page's resource holds
//! the same HTML on both sides and hydration agrees; the browser's bundle
//! has no Markdown parser. A reply the browser has no HTML for yet (one that
//! is streaming, or just arrived on the event stream) shows as plain text
//! until the page reloads the stored messages.

use aics_types::{MessageHtml, MessageRole};
use leptos::prelude::*;
use pulldown_cmark::{html, CowStr, Event, Options, Parser, Tag, TagEnd};

/// Whether a link target is one we let through.
fn allowed_link(url: &str) -> bool {
    let lower = url.trim().to_ascii_lowercase();
    lower.starts_with("https://") || lower.starts_with("http://") || lower.starts_with("mailto:")
}

/// `text` with `& < > " '` escaped for an attribute or element.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The safe HTML of a Markdown `text`.
pub fn render_markdown(text: &str) -> String {
    let options = Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TABLES;
    // Which link ends close an `<a>` we opened (a refused link opens none).
    let mut open_links: Vec<bool> = Vec::new();
    let events = Parser::new_ext(text, options).filter_map(|event| match event {
        // Raw HTML is shown as the text it is.
        Event::Html(raw) | Event::InlineHtml(raw) => Some(Event::Text(raw)),
        Event::Start(Tag::Link { dest_url, .. }) => {
            let ok = allowed_link(&dest_url);
            open_links.push(ok);
            ok.then(|| {
                Event::InlineHtml(CowStr::from(format!(
                    "<a href=\"{}\" target=\"_blank\" rel=\"noopener noreferrer\">",
                    escape(dest_url.trim())
                )))
            })
        }
        Event::End(TagEnd::Link) => open_links
            .pop()
            .unwrap_or(false)
            .then(|| Event::InlineHtml(CowStr::from("</a>"))),
        // An image shows its alt text (the events between these two).
        Event::Start(Tag::Image { .. }) | Event::End(TagEnd::Image) => None,
        other => Some(other),
    });
    let mut out = String::new();
    html::push_html(&mut out, events);
    out
}

/// Whether messages of `role` are Markdown (replies) rather than text.
pub fn is_markdown(role: MessageRole) -> bool {
    matches!(role, MessageRole::Assistant | MessageRole::Agent)
}

/// The HTML of every reply among `messages` (`(id, role, content)`), for a
/// server function to send beside them.
pub fn replies_html<'a>(
    messages: impl IntoIterator<Item = (i64, MessageRole, &'a str)>,
) -> Vec<MessageHtml> {
    messages
        .into_iter()
        .filter(|(_, role, _)| is_markdown(*role))
        .map(|(id, _, content)| MessageHtml {
            id,
            html: render_markdown(content),
        })
        .collect()
}

/// The HTML the server rendered for message `id`, if it sent one.
pub fn html_of(html: &[MessageHtml], id: i64) -> Option<String> {
    html.iter().find(|h| h.id == id).map(|h| h.html.clone())
}

/// A reply: its server-rendered HTML (from [`render_markdown`] only), or,
/// while there is none yet, its text as it is.
#[component]
pub fn Markdown(
    text: String,
    html: Option<String>,
    #[prop(optional)] testid: &'static str,
) -> impl IntoView {
    const CLASS: &str = "markdown break-words [&_a]:text-indigo-700 [&_a]:underline [&_code]:rounded [&_code]:bg-slate-100 [&_code]:px-1 [&_ol]:list-decimal [&_ol]:pl-5 [&_p]:my-1 [&_pre]:overflow-x-auto [&_ul]:list-disc [&_ul]:pl-5";
    match html {
        Some(html) => {
            view! { <div data-testid=testid class=CLASS inner_html=html></div> }.into_any()
        }
        None => view! {
            <div data-testid=testid class=CLASS>
                <p class="my-1 whitespace-pre-wrap">{text}</p>
            </div>
        }
        .into_any(),
    }
}

#[cfg(test)]
mod tests {
    use super::{render_markdown, replies_html};
    use aics_types::MessageRole;

    #[test]
    fn only_replies_get_html() {
        let html = replies_html([
            (1, MessageRole::Customer, "**hi**"),
            (2, MessageRole::Assistant, "**yes**"),
            (3, MessageRole::Note, "**note**"),
            (4, MessageRole::Agent, "<b>x</b>"),
        ]);
        let ids: Vec<i64> = html.iter().map(|h| h.id).collect();
        assert_eq!(ids, [2, 4]);
        assert!(html[0].html.contains("<strong>yes</strong>"), "{html:?}");
        assert!(html[1].html.contains("&lt;b&gt;"), "{html:?}");
    }

    #[test]
    fn lists_and_links_render() {
        let html = render_markdown(
            "Steps:\n\n- one\n- **two**\n\n[our policy](https://shop.example/returns)",
        );
        assert!(html.contains("<li>one</li>"), "{html}");
        assert!(html.contains("<strong>two</strong>"), "{html}");
        assert!(html.contains(
            "<a href=\"https://shop.example/returns\" target=\"_blank\" rel=\"noopener noreferrer\">our policy</a>"
        ), "{html}");
    }

    #[test]
    fn hostile_input_is_shown_as_text() {
        for hostile in [
            "<script>alert(1)</script>",
            "hi <img src=x onerror=alert(1)> there",
            "<div onclick=\"x()\">block</div>\n",
            "[click](javascript:alert(1))",
            "[click](JAVASCRIPT:alert(1))",
            "[click]( javascript:alert(1) )",
            "[x](data:text/html;base64,PHNjcmlwdD4=)",
            "![t](https://evil.example/track.png)",
            "<a href=\"javascript:alert(1)\">x</a>",
            "[a](https://ok.example/\"onmouseover=\"alert(1))",
        ] {
            let html = render_markdown(hostile);
            assert!(!html.contains("<script"), "{hostile} → {html}");
            assert!(!html.contains("<img"), "{hostile} → {html}");
            assert!(!html.contains("<div"), "{hostile} → {html}");
            let lower = html.to_lowercase();
            assert!(
                !lower.contains("<a href=\"javascript"),
                "{hostile} → {html}"
            );
            assert!(
                !lower.contains("<a href=\" javascript"),
                "{hostile} → {html}"
            );
            assert!(!lower.contains("<a href=\"data:"), "{hostile} → {html}");
            assert!(!html.contains("\"onmouseover"), "{hostile} → {html}");
        }
        let shown = render_markdown("<script>alert(1)</script>");
        assert!(shown.contains("&lt;script&gt;"), "{shown}");
        let refused = render_markdown("[click](javascript:alert(1))");
        assert!(
            refused.contains("click") && !refused.contains("<a"),
            "{refused}"
        );
    }
}
