//! One reading of a customer's text for the keyword classifiers (the route's
//! intent, the approval policy's `$customer`): the letters a reader sees,
//! not the code points a sender chose. NFKC (full-width and mathematical
//! letters, ligatures), no format characters (Unicode category Cf: zero-width
//! spaces, joiners, bidi controls, tags), no diacritics ("Rückerstattung"
//! reads as "ruckerstattung"), Cyrillic and Greek look-alikes inside Latin
//! words folded to Latin, lowercase. It also says whether the text was
//! disguised and which scripts it is written in, so that a classifier can
//! tell when it is unsure.

use unicode_normalization::char::is_combining_mark;
use unicode_normalization::UnicodeNormalization;
use unicode_properties::{GeneralCategory, UnicodeGeneralCategory};

/// A text as the classifiers read it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Folded {
    /// The text to match keywords against: normalised and lowercase.
    pub text: String,
    /// Whether the text hid a word from a plain keyword match: invisible
    /// characters inside a word, bidi controls or tags anywhere, Cyrillic
    /// or Greek look-alikes among Latin letters, or a word spelt out one
    /// letter at a time ("r e f u n d").
    pub disguised: bool,
    /// Letters in the scripts the classifiers read: Latin, Han, kana, Hangul.
    pub covered_letters: usize,
    /// Letters in any other script.
    pub other_letters: usize,
}

/// Reads `text` as the classifiers do (see the module's doc).
pub fn fold(text: &str) -> Folded {
    // ASCII has no format characters, marks or look-alikes: only the case
    // and the spelt-out words are left (the common case stays cheap).
    let (lower, mut disguised) = if text.is_ascii() {
        (text.to_ascii_lowercase(), false)
    } else {
        fold_unicode(text)
    };
    let (text, spelt) = with_spelt_words(lower);
    disguised |= spelt;
    let (mut covered_letters, mut other_letters) = (0, 0);
    for c in text.chars().filter(|c| c.is_alphabetic()) {
        if is_latin(c) || is_east_asian(c) {
            covered_letters += 1;
        } else {
            other_letters += 1;
        }
    }
    Folded {
        text,
        disguised,
        covered_letters,
        other_letters,
    }
}

fn fold_unicode(text: &str) -> (String, bool) {
    let mut disguised = false;
    let chars: Vec<char> = text.chars().collect();
    let mut visible = String::with_capacity(text.len());
    for (i, &c) in chars.iter().enumerate() {
        if is_invisible(c) {
            // A joiner between two emoji or a mark at the text's edge is
            // ordinary; inside a word it only serves to split a keyword.
            if is_bidi_control(c) || is_tag(c) || inside_word(&chars, i) {
                disguised = true;
            }
            continue;
        }
        visible.push(c);
    }
    // Compatibility decomposition, then without its marks ("ü" → "u"),
    // except the voicing marks of kana, which make other words ("か" → "が").
    let mut bare = String::with_capacity(visible.len());
    let mut base = ' ';
    for c in visible.nfkd() {
        if is_combining_mark(c) {
            if is_kana(base) {
                bare.push(c);
            }
            continue;
        }
        base = c;
        bare.push(c);
    }
    let composed: String = bare.nfc().collect();
    let (latin, lookalike_script) = composed.chars().fold((0usize, 0usize), |(l, o), c| {
        (
            l + usize::from(is_latin(c)),
            o + usize::from(is_cyrillic_or_greek(c)),
        )
    });
    let mut out = String::with_capacity(composed.len());
    let mut word = String::new();
    let mostly_latin = latin > lookalike_script;
    for c in composed.chars() {
        if c.is_alphanumeric() {
            word.push(c);
        } else {
            disguised |= push_word(&mut out, &mut word, mostly_latin);
            push_lower(&mut out, normal_punctuation(c));
        }
    }
    disguised |= push_word(&mut out, &mut word, mostly_latin);
    (out, disguised)
}

/// Appends `word` in lowercase, its look-alikes folded; `true` when it was
/// disguised: look-alikes were folded, or Latin letters share the word with
/// letters of another alphabet ("refunд"), which no language writes.
fn push_word(out: &mut String, word: &mut String, mostly_latin: bool) -> bool {
    let folded = fold_lookalikes(word, mostly_latin);
    let mixed = word.chars().any(is_latin)
        && word
            .chars()
            .any(|c| c.is_alphabetic() && !is_latin(c) && !is_east_asian(c));
    for c in folded.as_deref().unwrap_or(word).chars() {
        push_lower(out, c);
    }
    word.clear();
    folded.is_some() || mixed
}

/// The word with its Cyrillic and Greek look-alikes in Latin letters, when
/// it is a disguised Latin word: every such letter of it has a Latin twin
/// and it holds Latin letters too, or the text is mostly Latin.
fn fold_lookalikes(word: &str, mostly_latin: bool) -> Option<String> {
    let mut has_latin = false;
    let mut has_lookalike = false;
    for c in word.chars() {
        if is_latin(c) {
            has_latin = true;
        } else if is_cyrillic_or_greek(c) {
            // A letter without a Latin twin: a Russian or Greek word.
            latin_twin(c)?;
            has_lookalike = true;
        }
    }
    if !has_lookalike || !(has_latin || mostly_latin) {
        return None;
    }
    Some(word.chars().map(|c| latin_twin(c).unwrap_or(c)).collect())
}

/// The Latin letter a Cyrillic or Greek one is drawn like (Unicode's
/// confusables, the common ones).
fn latin_twin(c: char) -> Option<char> {
    Some(match c {
        'а' | 'А' | 'α' | 'Α' => 'a',
        'В' | 'Β' | 'в' => 'b',
        'с' | 'С' | 'ϲ' | 'Ϲ' => 'c',
        'ԁ' => 'd',
        'е' | 'Е' | 'ё' | 'Ё' | 'ε' | 'Ε' => 'e',
        'һ' | 'Н' | 'Η' | 'н' => 'h',
        'і' | 'І' | 'ї' | 'Ї' | 'ι' | 'Ι' | 'Ӏ' => 'i',
        'ј' | 'Ј' | 'ϳ' => 'j',
        'к' | 'К' | 'κ' | 'Κ' => 'k',
        'ӏ' => 'l',
        'м' | 'М' | 'Μ' => 'm',
        'Ν' | 'η' => 'n',
        'о' | 'О' | 'ο' | 'Ο' | 'σ' => 'o',
        'р' | 'Р' | 'ρ' | 'Ρ' => 'p',
        'ԛ' | 'Ԛ' => 'q',
        'ѕ' | 'Ѕ' => 's',
        'т' | 'Т' | 'τ' | 'Τ' => 't',
        'υ' | 'Υ' => 'u',
        'ν' => 'v',
        'ԝ' | 'Ԝ' | 'ω' => 'w',
        'х' | 'Х' | 'χ' | 'Χ' => 'x',
        'у' | 'У' | 'γ' | 'ү' | 'Ү' => 'y',
        'Ζ' => 'z',
        _ => return None,
    })
}

/// Lowercase, with the Latin letters NFKC keeps apart from their plain twins.
fn push_lower(out: &mut String, c: char) {
    match c {
        'ß' | 'ẞ' => out.push_str("ss"),
        'ı' | 'ɩ' => out.push('i'),
        'ɑ' => out.push('a'),
        'ɡ' => out.push('g'),
        'ø' | 'Ø' => out.push('o'),
        'æ' | 'Æ' => out.push_str("ae"),
        'œ' | 'Œ' => out.push_str("oe"),
        'đ' | 'Đ' => out.push('d'),
        'ł' | 'Ł' => out.push('l'),
        _ => out.extend(c.to_lowercase()),
    }
}

/// Typographic quotes and dashes as the ASCII ones the keywords use.
fn normal_punctuation(c: char) -> char {
    match c {
        '\u{2018}' | '\u{2019}' | '\u{02BC}' | '\u{2032}' => '\'',
        '\u{2010}'..='\u{2015}' | '\u{2212}' => '-',
        _ => c,
    }
}

/// A word spelt one letter at a time ("r e f u n d", "r.e.f.u.n.d") is
/// appended whole, so the keywords find it; that is a disguise too.
fn with_spelt_words(text: String) -> (String, bool) {
    const SPELT: usize = 4;
    let chars: Vec<char> = text.chars().collect();
    // A Latin letter alone between two characters that are not letters or
    // digits (in Korean, four one-syllable words in a row are ordinary).
    let single = |i: usize| {
        chars.get(i).is_some_and(|&c| is_latin(c))
            && (i == 0 || !chars[i - 1].is_alphanumeric())
            && chars.get(i + 1).is_none_or(|c| !c.is_alphanumeric())
    };
    let mut words = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if !single(i) {
            i += 1;
            continue;
        }
        // The next letter follows after exactly one separator.
        let mut run = String::new();
        while single(i) {
            run.push(chars[i]);
            i += 2;
        }
        if run.chars().count() >= SPELT {
            words.push(run);
        }
    }
    if words.is_empty() {
        return (text, false);
    }
    let mut text = text;
    for w in words {
        text.push(' ');
        text.push_str(&w);
    }
    (text, true)
}

/// Characters that draw nothing: format characters (Cf) and the Hangul
/// fillers, which are letters by category but blank.
fn is_invisible(c: char) -> bool {
    c.general_category() == GeneralCategory::Format
        || matches!(c, '\u{115F}' | '\u{1160}' | '\u{3164}' | '\u{FFA0}')
}

fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// Tag characters: invisible ASCII, a way to smuggle text past a reader.
fn is_tag(c: char) -> bool {
    matches!(c, '\u{E0000}'..='\u{E007F}')
}

/// Whether the invisible character at `i` has a letter or digit on both
/// sides (other invisible characters skipped).
fn inside_word(chars: &[char], i: usize) -> bool {
    let visible = |c: &&char| !is_invisible(**c);
    let before = chars[..i].iter().rev().find(visible);
    let after = chars[i + 1..].iter().find(visible);
    before.is_some_and(|c| c.is_alphanumeric()) && after.is_some_and(|c| c.is_alphanumeric())
}

/// A letter of the Latin script.
pub fn is_latin(c: char) -> bool {
    c.is_ascii_alphabetic()
        || (c.is_alphabetic()
            && matches!(c as u32, 0xC0..=0x24F | 0x1E00..=0x1EFF | 0x2C60..=0x2C7F | 0xA720..=0xA7FF))
}

fn is_cyrillic_or_greek(c: char) -> bool {
    matches!(c as u32, 0x370..=0x52F | 0x1C80..=0x1C8F | 0x1F00..=0x1FFF | 0x2DE0..=0x2DFF | 0xA640..=0xA69F)
}

fn is_kana(c: char) -> bool {
    matches!(c as u32, 0x3040..=0x30FF | 0x31F0..=0x31FF)
}

/// Han, kana and Hangul: the scripts of Chinese, Japanese and Korean.
fn is_east_asian(c: char) -> bool {
    is_kana(c)
        || matches!(
            c as u32,
            0x4E00..=0x9FFF
                | 0x3400..=0x4DBF
                | 0xF900..=0xFAFF
                | 0x20000..=0x2FFFF
                | 0x3005
                | 0x1100..=0x11FF
                | 0x3130..=0x318F
                | 0xAC00..=0xD7AF
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disguises_are_undone_and_noticed() {
        for (raw, plain) in [
            ("re\u{200b}fund", "refund"),
            ("re\u{00ad}fu\u{2060}nd", "refund"),
            ("r\u{0435}fund", "refund"),
            ("Rе\u{0301}fund", "refund"),
            ("ｒｅｆｕｎｄ", "refund"),
            ("𝐫𝐞𝐟𝐮𝐧𝐝", "refund"),
            ("REFUND", "refund"),
        ] {
            let f = fold(raw);
            assert!(f.text.contains(plain), "{raw:?} → {:?}", f.text);
        }
        for disguised in [
            "re\u{200b}fund",
            "r\u{0435}fund",
            "\u{202e}dnufer",
            "r e f u n d please",
            "r.e.f.u.n.d",
            "ok\u{E0041}",
            "refun\u{0434}",
            "ref\u{057D}nd",
        ] {
            assert!(fold(disguised).disguised, "{disguised:?}");
        }
        assert!(fold("r.e.f.u.n.d").text.contains("refund"));
    }

    #[test]
    fn ordinary_text_is_not_a_disguise() {
        for plain in [
            "Where is my order ORD-123?",
            "Ich möchte eine Rückerstattung",
            "Où est ma commande ?",
            "我的订单ORD-123一直没收到",
            "ORD-123がまだ届きません",
            "주문 ORD-123 환불해 주세요",
            "Я хочу вернуть деньги",
            "Family: 👨\u{200d}👩\u{200d}👧 thanks",
            "\u{feff}hello",
            "I am a VIP",
            "그 책 좀 줘",
            "Tシャツの返金",
        ] {
            assert!(!fold(plain).disguised, "{plain:?}: {:?}", fold(plain));
        }
    }

    #[test]
    fn accents_go_and_east_asian_words_stay_whole() {
        assert_eq!(fold("Rückerstattung").text, "ruckerstattung");
        assert_eq!(fold("Große Enttäuschung").text, "grosse enttauschung");
        assert_eq!(fold("remboursé").text, "rembourse");
        assert_eq!(fold("届いていません").text, "届いていません");
        assert_eq!(fold("ｶﾞｽ").text, "ガス");
        assert_eq!(fold("환불").text, "환불");
        assert_eq!(fold("退款").text, "退款");
        assert_eq!(fold("l’argent").text, "l'argent");
    }

    #[test]
    fn scripts_are_counted() {
        let russian = fold("Я хочу вернуть деньги за заказ");
        assert!(russian.other_letters > russian.covered_letters);
        assert!(!russian.text.contains('x'), "a Russian word is not folded");
        let english = fold("Where is ORD-123?");
        assert_eq!(english.other_letters, 0);
        let chinese = fold("我要退款");
        assert_eq!((chinese.covered_letters, chinese.other_letters), (4, 0));
    }
}
