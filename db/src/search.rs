//! How text becomes full-text search terms, the same way for both databases.
//!
//! English is cut into lowercase words with a light stemming (plural and
//! common endings), Chinese (and other CJK scripts, which have no spaces) into
//! overlapping pairs of characters: "退货政策" → "退货 货政 政策". A query is cut
//! the same way, so "退货" finds "退货政策" and "refunds" finds "refund".
//! The articles store these terms in `search_text`; SQLite's FTS5
//! (`unicode61`) and PostgreSQL's tsvector (`simple`) index them as given.

/// English words that carry no meaning for search.
const STOPWORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "can", "do", "does", "for", "from", "how",
    "i", "if", "in", "is", "it", "me", "my", "of", "on", "or", "our", "so", "that", "the", "this",
    "to", "was", "we", "what", "when", "where", "which", "who", "why", "will", "with", "you",
    "your",
];

/// The most terms a query is cut into; longer questions add little.
const MAX_QUERY_TERMS: usize = 32;

fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF      // Hiragana, Katakana
        | 0x3400..=0x4DBF    // CJK extension A
        | 0x4E00..=0x9FFF    // CJK unified ideographs
        | 0xAC00..=0xD7AF    // Hangul syllables
        | 0xF900..=0xFAFF    // CJK compatibility ideographs
        | 0x20000..=0x2FFFF) // CJK extensions B and later
}

/// A light English stemmer: enough for "refunds" to meet "refund" and
/// "delayed" to meet "delay", never more than the two forms share.
fn stem(word: &str) -> String {
    let n = word.len();
    if n > 4 && word.ends_with("ies") {
        return format!("{}y", &word[..n - 3]);
    }
    if n > 5 && word.ends_with("ing") {
        return word[..n - 3].to_owned();
    }
    if n > 4 && word.ends_with("ed") {
        return word[..n - 2].to_owned();
    }
    if n > 3 && word.ends_with('s') && !word.ends_with("ss") && !word.ends_with("us") {
        return word[..n - 1].to_owned();
    }
    word.to_owned()
}

fn push_word(word: &mut String, out: &mut Vec<String>) {
    if !word.is_empty() {
        let lower = word.to_lowercase();
        if !STOPWORDS.contains(&lower.as_str()) {
            out.push(stem(&lower));
        }
        word.clear();
    }
}

fn push_cjk(run: &mut Vec<char>, out: &mut Vec<String>) {
    match run.len() {
        0 => {}
        1 => out.push(run[0].to_string()),
        _ => out.extend(run.windows(2).map(|w| w.iter().collect::<String>())),
    }
    run.clear();
}

/// Cuts text into search terms, in order, with repeats.
pub fn terms(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut run = Vec::new();
    for c in text.chars() {
        if is_cjk(c) {
            push_word(&mut word, &mut out);
            run.push(c);
        } else if c.is_alphanumeric() {
            push_cjk(&mut run, &mut out);
            word.push(c);
        } else {
            push_word(&mut word, &mut out);
            push_cjk(&mut run, &mut out);
        }
    }
    push_word(&mut word, &mut out);
    push_cjk(&mut run, &mut out);
    out
}

/// The text an article is indexed by: the title counts twice.
pub fn index_text(title: &str, body: &str) -> String {
    let title = terms(title).join(" ");
    format!("{title} {title} {}", terms(body).join(" "))
}

/// The distinct terms of a query, at most 32.
pub fn query_terms(query: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for term in terms(query) {
        if !out.contains(&term) {
            out.push(term);
        }
        if out.len() == MAX_QUERY_TERMS {
            break;
        }
    }
    out
}

/// A short excerpt of `body` around the first term it contains.
pub fn snippet(body: &str, terms: &[String]) -> String {
    const BEFORE: usize = 30;
    const LEN: usize = 140;
    let chars: Vec<char> = body.chars().collect();
    let lower: Vec<char> = body.to_lowercase().chars().collect();
    // Lowercasing may change the length of exotic characters; then search the
    // original instead of misplacing the window.
    let haystack = if lower.len() == chars.len() {
        &lower
    } else {
        &chars
    };
    let start = terms
        .iter()
        .filter_map(|t| {
            let needle: Vec<char> = t.chars().collect();
            haystack
                .windows(needle.len().max(1))
                .position(|w| w == needle.as_slice())
        })
        .min()
        .map_or(0, |at| at.saturating_sub(BEFORE));
    let end = (start + LEN).min(chars.len());
    let mut text: String = chars[start..end].iter().collect();
    if start > 0 {
        text.insert(0, '…');
    }
    if end < chars.len() {
        text.push('…');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn english_is_cut_into_stemmed_words() {
        assert_eq!(
            terms("Refunds for delayed orders"),
            ["refund", "delay", "order"]
        );
    }

    #[test]
    fn chinese_is_cut_into_pairs() {
        assert_eq!(terms("退货政策"), ["退货", "货政", "政策"]);
        assert_eq!(terms("订单ORD-123"), ["订单", "ord", "123"]);
        assert_eq!(terms("我"), ["我"]);
    }

    #[test]
    fn snippet_centres_on_a_term() {
        let body = format!("{}refund window is 30 days", "x ".repeat(100));
        let s = snippet(&body, &["refund".into()]);
        assert!(s.contains("refund window"), "{s}");
        assert!(s.starts_with('…'));
    }
}
