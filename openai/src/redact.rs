//! What of a provider may be shown: its URL without userinfo, query or
//! fragment ([`redact_url`]), and any text with the URLs in it redacted and
//! the provider's secrets masked ([`Redactor`]).
//!
//! Some gateways take their key in the URL (`…/v1?api-key=…`, Azure's and
//! Gemini's compatible modes), and reqwest's errors print the URL they were
//! sending to: every error, log line and trace of this crate passes through
//! here first.

use aics_agent::model::ModelError;
use reqwest::Url;

/// What a redacted part of a URL or a masked secret is replaced by.
const REDACTED: &str = "[redacted]";

/// Secrets shorter than this are not masked: masking `1` or `v1` would
/// garble every message, and a key that short guards nothing.
const MIN_SECRET_CHARS: usize = 4;

/// `url` as it may be shown: the scheme, host, port and path only. Userinfo
/// becomes `[redacted]@`, a query `?[redacted]`, a fragment is dropped, and
/// `name=value` pieces of the path keep their names only. Text that does not
/// parse as a URL is cut the same way, by its punctuation.
pub fn redact_url(url: &str) -> String {
    match Url::parse(url.trim()) {
        Ok(parsed) if parsed.has_host() => {
            let mut out = format!("{}://", parsed.scheme());
            if !parsed.username().is_empty() || parsed.password().is_some() {
                out.push_str(REDACTED);
                out.push('@');
            }
            out.push_str(parsed.host_str().unwrap_or_default());
            if let Some(port) = parsed.port() {
                out.push_str(&format!(":{port}"));
            }
            out.push_str(&redact_path(parsed.path()));
            if parsed.query().is_some() {
                out.push('?');
                out.push_str(REDACTED);
            }
            out
        }
        _ => redact_unparsed(url),
    }
}

/// The fallback of [`redact_url`] for text that is not a URL `url` parses.
fn redact_unparsed(url: &str) -> String {
    let (rest, query) = match url.find(['?', '#']) {
        Some(at) => (&url[..at], url[at..].starts_with('?')),
        None => (url, false),
    };
    let (scheme, rest) = match rest.split_once("://") {
        Some((scheme, rest)) => (Some(scheme), rest),
        None => (None, rest),
    };
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let mut out = String::new();
    if let Some(scheme) = scheme {
        out.push_str(scheme);
        out.push_str("://");
    }
    match authority.rsplit_once('@') {
        Some((_, host)) => {
            out.push_str(REDACTED);
            out.push('@');
            out.push_str(host);
        }
        None => out.push_str(authority),
    }
    out.push_str(&redact_path(path));
    if query {
        out.push('?');
        out.push_str(REDACTED);
    }
    out
}

/// A path with the values of its `name=value` pieces (`/key=…/`,
/// `;token=…`) masked.
fn redact_path(path: &str) -> String {
    if !path.contains('=') {
        return path.to_owned();
    }
    path.split('/')
        .map(|segment| {
            segment
                .split(';')
                .map(|piece| match piece.split_once('=') {
                    Some((name, _)) => format!("{name}={REDACTED}"),
                    None => piece.to_owned(),
                })
                .collect::<Vec<_>>()
                .join(";")
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// `text` with every `http://` and `https://` URL in it passed through
/// [`redact_url`]. A URL runs to the next whitespace or quote; closing
/// brackets after it that it did not open stay outside (reqwest writes
/// "for url (…)").
pub fn redact_urls(text: &str) -> String {
    let lower = text.to_ascii_lowercase();
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    while let Some(start) = next_url(&lower, at) {
        let len = text[start..]
            .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '`' | '<' | '>'))
            .unwrap_or(text.len() - start);
        let mut url = &text[start..start + len];
        // Unmatched closers belong to the text around the URL.
        while url.ends_with([')', ']', ',', '.', ';', ':'])
            && (!url.ends_with(')') || url.matches(')').count() > url.matches('(').count())
            && (!url.ends_with(']') || url.matches(']').count() > url.matches('[').count())
        {
            url = &url[..url.len() - 1];
        }
        out.push_str(&text[at..start]);
        out.push_str(&redact_url(url));
        at = start + url.len();
    }
    out.push_str(&text[at..]);
    out
}

/// Where the next `http://` or `https://` starts in `lower` from `from`.
fn next_url(lower: &str, from: usize) -> Option<usize> {
    let rest = &lower[from..];
    [rest.find("http://"), rest.find("https://")]
        .into_iter()
        .flatten()
        .min()
        .map(|at| from + at)
}

/// The secrets of one provider — its API key, its extra headers' values,
/// and the userinfo and query values of its base URL — masked wherever a
/// text about it is shown, after its URLs were redacted.
#[derive(Clone, Default)]
pub(crate) struct Redactor {
    secrets: Vec<String>,
}

impl Redactor {
    pub(crate) fn new<'a>(
        base_url: &str,
        api_key: Option<&str>,
        header_values: impl IntoIterator<Item = &'a str>,
    ) -> Self {
        let mut secrets: Vec<String> = api_key.into_iter().map(str::to_owned).collect();
        secrets.extend(header_values.into_iter().map(str::to_owned));
        if let Ok(url) = Url::parse(base_url.trim()) {
            secrets.push(url.username().to_owned());
            secrets.extend(url.password().map(str::to_owned));
            if let Some(query) = url.query() {
                // As written and as decoded: a server may echo either.
                secrets.extend(
                    query
                        .split('&')
                        .filter_map(|p| Some(p.split_once('=')?.1.to_owned())),
                );
                secrets.extend(url.query_pairs().map(|(_, value)| value.into_owned()));
            }
        }
        secrets.retain(|s| s.trim().chars().count() >= MIN_SECRET_CHARS);
        // The longest first, so that a secret containing another is masked whole.
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        secrets.dedup();
        Self { secrets }
    }

    /// `text` with its URLs redacted and the secrets masked.
    pub(crate) fn scrub(&self, text: &str) -> String {
        let mut text = redact_urls(text);
        for secret in &self.secrets {
            if text.contains(secret.as_str()) {
                text = text.replace(secret.as_str(), REDACTED);
            }
        }
        text
    }

    /// `error` with its text scrubbed.
    pub(crate) fn error(&self, error: ModelError) -> ModelError {
        match error {
            ModelError::Connect(text) => ModelError::Connect(self.scrub(&text)),
            ModelError::Status { status, message } => ModelError::Status {
                status,
                message: self.scrub(&message),
            },
            ModelError::Timeout(text) => ModelError::Timeout(self.scrub(&text)),
            ModelError::Protocol(text) => ModelError::Protocol(self.scrub(&text)),
            ModelError::Injected(text) => ModelError::Injected(self.scrub(&text)),
            ModelError::Other(text) => ModelError::Other(self.scrub(&text)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_lose_their_userinfo_query_and_fragment() {
        assert_eq!(
            redact_url("http://127.0.0.1:8000/v1?api-key=SECRET"),
            "http://127.0.0.1:8000/v1?[redacted]"
        );
        assert_eq!(
            redact_url("https://user:PASS@example.com/v1/chat/completions#frag"),
            "https://[redacted]@example.com/v1/chat/completions"
        );
        assert_eq!(
            redact_url("https://api.openai.com/v1"),
            "https://api.openai.com/v1"
        );
        assert_eq!(
            redact_url("http://[::1]:8080/gw/key=SECRET;token=T2/v1"),
            "http://[::1]:8080/gw/key=[redacted];token=[redacted]/v1"
        );
        // Not a URL `url` parses: cut by its punctuation all the same.
        assert_eq!(
            redact_url("http://u:PASS@exa mple.com/x?key=SECRET"),
            "http://[redacted]@exa mple.com/x?[redacted]"
        );
        assert_eq!(redact_url("not a url?key=SECRET"), "not a url?[redacted]");
    }

    #[test]
    fn urls_inside_text_are_redacted_and_the_text_kept() {
        let text = "error sending request for url (http://u:P@127.0.0.1:9/v1/chat/completions?api-key=SECRET): \
                    connection refused";
        assert_eq!(
            redact_urls(text),
            "error sending request for url (http://[redacted]@127.0.0.1:9/v1/chat/completions?[redacted]): \
             connection refused"
        );
        assert_eq!(
            redact_urls("see HTTPS://h/x?k=SECRET, then"),
            "see https://h/x?[redacted], then"
        );
        assert_eq!(redact_urls("no url here"), "no url here");
        assert_eq!(
            redact_urls("twice: http://a/?k=S1 and https://b/c?k=S2."),
            "twice: http://a/?[redacted] and https://b/c?[redacted]."
        );
    }

    #[test]
    fn the_redactor_masks_keys_headers_and_url_secrets() {
        let redactor = Redactor::new(
            "http://user:PASSWORD@127.0.0.1:1/v1?api-key=SECRET%2Bkey&v=1",
            Some("sk-the-key"),
            ["gw-secret", "x"],
        );
        let text = "echo: /v1/chat/completions?api-key=SECRET%2Bkey and SECRET+key, \
                    Bearer sk-the-key, gw-secret, user PASSWORD, v=1";
        let scrubbed = redactor.scrub(text);
        for secret in ["SECRET", "sk-the-key", "gw-secret", "PASSWORD"] {
            assert!(!scrubbed.contains(secret), "{secret} in {scrubbed}");
        }
        assert!(
            scrubbed.ends_with("v=1"),
            "short values are left: {scrubbed}"
        );
        let error = redactor.error(ModelError::Status {
            status: 401,
            message: "bad key SECRET+key".into(),
        });
        assert!(!error.to_string().contains("SECRET"), "{error}");
    }
}
