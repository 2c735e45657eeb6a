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

/// How long a snippet may be, in columns: a CJK character counts two, so a
/// Chinese snippet holds about half as many characters as an English one.
const SNIPPET_WIDTH: usize = 200;

/// How much of a long sentence is kept before the term, in columns.
const SNIPPET_LEAD: usize = 60;

fn width(chars: &[char]) -> usize {
    chars.iter().map(|&c| if is_cjk(c) { 2 } else { 1 }).sum()
}

/// Closing quotes and brackets, which stay with the sentence they close.
fn closes(c: char) -> bool {
    matches!(c, '"' | '\'' | '”' | '’' | '」' | ')' | '）')
}

/// How many closers follow `chars[i]` as part of its sentence: typographic
/// ones always, an ASCII quote only when a space or the end follows it
/// (else it opens the next sentence).
fn closers_after(chars: &[char], i: usize) -> usize {
    let mut n = 0;
    while let Some(&c) = chars.get(i + 1 + n) {
        let ascii = matches!(c, '"' | '\'');
        let spaced = chars.get(i + 2 + n).is_none_or(|c| c.is_whitespace());
        if !closes(c) || (ascii && !spaced) {
            break;
        }
        n += 1;
    }
    n
}

/// Whether a sentence ends at `chars[i]`: 。！？ always; . ! ? when a space
/// or the end follows (after any closers), so "3.5" and "e.g.x" do not.
fn ends_sentence(chars: &[char], i: usize) -> bool {
    match chars[i] {
        '。' | '！' | '？' => true,
        '.' | '!' | '?' => chars
            .get(i + 1 + closers_after(chars, i))
            .is_none_or(|c| c.is_whitespace()),
        _ => false,
    }
}

/// The sentences of `chars` as `start..end` ranges, leading spaces left out.
fn sentences(chars: &[char]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < chars.len() {
        if ends_sentence(chars, i) {
            let end = i + 1 + closers_after(chars, i);
            out.push((start, end));
            start = end;
            i = end;
        } else {
            i += 1;
        }
    }
    if start < chars.len() {
        out.push((start, chars.len()));
    }
    out.into_iter()
        .map(|(s, e)| {
            let lead = chars[s..e].iter().take_while(|c| c.is_whitespace()).count();
            (s + lead, e)
        })
        .filter(|(s, e)| s < e)
        .collect()
}

/// A window of one long sentence `start..end` around `hit`, cut between
/// words where the text has spaces, with an ellipsis where it was cut.
fn window(chars: &[char], start: usize, end: usize, hit: usize) -> String {
    let mut from = hit;
    while from > start && width(&chars[from - 1..hit]) <= SNIPPET_LEAD {
        from -= 1;
    }
    if from > start {
        // Start after a space, if there is one near: never mid-word.
        if let Some(sp) = chars[from..hit].iter().position(|c| c.is_whitespace()) {
            from += sp + 1;
        }
    }
    let mut to = from;
    while to < end && width(&chars[from..=to]) <= SNIPPET_WIDTH {
        to += 1;
    }
    if to < end {
        if let Some(sp) = chars[from..to].iter().rposition(|c| c.is_whitespace()) {
            if sp > 0 {
                to = from + sp;
            }
        }
    }
    let mut text: String = chars[from..to].iter().collect::<String>().trim().to_owned();
    if from > start {
        text.insert(0, '…');
    }
    if to < end {
        text.push('…');
    }
    text
}

/// A short excerpt of `body` around the first term it contains: the
/// sentence that holds the term and the whole sentences after it that fit
/// ([`SNIPPET_WIDTH`]). Only a sentence too long to fit is cut, between
/// words, and an ellipsis marks each cut; whole sentences carry none.
pub fn snippet(body: &str, terms: &[String]) -> String {
    let chars: Vec<char> = body.chars().collect();
    let lower: Vec<char> = body.to_lowercase().chars().collect();
    // Lowercasing may change the length of exotic characters; then search the
    // original instead of misplacing the window.
    let haystack = if lower.len() == chars.len() {
        &lower
    } else {
        &chars
    };
    let hit = terms
        .iter()
        .filter_map(|t| {
            let needle: Vec<char> = t.chars().collect();
            haystack
                .windows(needle.len().max(1))
                .position(|w| w == needle.as_slice())
        })
        .min()
        .unwrap_or(0);
    let spans = sentences(&chars);
    let Some(first) = spans
        .iter()
        .position(|&(_, e)| hit < e)
        .or(spans.len().checked_sub(1))
    else {
        return String::new();
    };
    let (start, end) = spans[first];
    if width(&chars[start..end]) > SNIPPET_WIDTH {
        return window(&chars, start, end, hit.max(start));
    }
    let last = spans[first..]
        .iter()
        .take_while(|&&(_, e)| width(&chars[start..e]) <= SNIPPET_WIDTH)
        .last()
        .map_or(end, |&(_, e)| e);
    chars[start..last]
        .iter()
        .collect::<String>()
        .trim()
        .to_owned()
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

    /// refund-policy-en of the demo data (seed.rs).
    const REFUNDS: &str = "Refunds go back to the original payment method. After a return passes inspection the refund is issued within 2 working days; banks take 3 to 7 working days to show it. A parcel declared lost by the carrier is refunded in full, or replaced if the customer prefers. Refunds above 1000 CNY and refunds without a return need a supervisor's approval.";

    /// refund-policy-zh of the demo data.
    const REFUNDS_ZH: &str = "退款将原路返回至支付账户。退货检验通过后2个工作日内发起退款，银行到账需3至7个工作日。快递公司确认丢件的包裹全额退款，客户也可以选择补发。超过1000元的退款以及无需退货的退款需要主管审批。商品有质量问题或配送延误时，运费一并退还。";

    fn cut(body: &str, query: &str) -> String {
        snippet(body, &query_terms(query))
    }

    #[test]
    fn a_snippet_is_whole_sentences_from_the_one_with_the_term() {
        let s = cut(REFUNDS, "refund");
        assert!(
            s.starts_with("Refunds go back to the original payment method. After a return"),
            "{s}"
        );
        assert!(s.ends_with('.') && !s.contains('…'), "{s}");
        assert!(width(&s.chars().collect::<Vec<_>>()) <= SNIPPET_WIDTH);
        let s = cut(REFUNDS, "lost parcel");
        assert!(
            s.starts_with("A parcel declared lost by the carrier"),
            "{s}"
        );
        assert!(s.ends_with("approval."), "{s}");
    }

    #[test]
    fn chinese_snippets_end_at_chinese_sentence_ends() {
        let s = cut(REFUNDS_ZH, "丢件");
        assert!(s.starts_with("快递公司确认丢件的包裹全额退款"), "{s}");
        assert!(s.ends_with('。') && !s.contains('…'), "{s}");
        let s = cut(REFUNDS_ZH, "退款");
        assert!(s.starts_with("退款将原路返回至支付账户。"), "{s}");
        assert!(s.chars().count() <= SNIPPET_WIDTH / 2, "{s}");
    }

    #[test]
    fn sentence_ends_are_punctuation_before_a_space_or_the_end() {
        let chars: Vec<char> = "Costs 3.5 CNY. Really! Yes? 好。对！\"Quoted.\" Last"
            .chars()
            .collect();
        let got: Vec<String> = sentences(&chars)
            .into_iter()
            .map(|(s, e)| chars[s..e].iter().collect())
            .collect();
        assert_eq!(
            got,
            [
                "Costs 3.5 CNY.",
                "Really!",
                "Yes?",
                "好。",
                "对！",
                "\"Quoted.\"",
                "Last"
            ]
        );
    }

    #[test]
    fn a_short_body_is_its_own_snippet() {
        assert_eq!(cut("Returns are free.", "returns"), "Returns are free.");
        assert_eq!(cut("", "returns"), "");
    }

    #[test]
    fn a_sentence_too_long_is_cut_between_words_with_ellipses() {
        let body = format!(
            "Start {} refund window is 30 days {} end.",
            "word ".repeat(60),
            "more ".repeat(60)
        );
        let s = cut(&body, "refund");
        assert!(s.starts_with('…') && s.ends_with('…'), "{s}");
        assert!(s.contains("refund window"), "{s}");
        assert!(s[3..].starts_with("word"), "starts at a word: {s}");
        assert!(
            s.trim_end_matches('…').ends_with("more"),
            "ends at a word: {s}"
        );
    }

    #[test]
    fn snippet_centres_on_a_term() {
        let body = format!("{}refund window is 30 days", "x ".repeat(100));
        let s = snippet(&body, &["refund".into()]);
        assert!(s.contains("refund window"), "{s}");
        assert!(s.starts_with('…'));
    }
}
