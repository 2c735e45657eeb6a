//! The support graph's cheap, deterministic judgements: intent labels,
//! memory instructions, the customer's language, order ids, and the
//! similarity test behind loop detection. No LLM call is spent on these.

use std::collections::HashSet;
use std::sync::LazyLock;

use aics_types::Intent;
use regex::Regex;

use super::normalize::{fold, is_latin, Folded};

// The patterns are literals checked by the tests below; `expect` cannot fire
// at run time for a pattern that compiled once in a test.
#[allow(clippy::expect_used)]
fn re(pattern: &str) -> Regex {
    Regex::new(pattern).expect("static regex")
}

// The keyword patterns read folded text (`super::normalize`): lowercase,
// NFKC, without diacritics, so "Rückerstattung" is written "ruckerstattung".
// Each holds English and Chinese first (as before), then German, French,
// Spanish, Italian, Portuguese, Dutch, Japanese and Korean.
static ESCALATE: LazyLock<Regex> = LazyLock::new(|| {
    re(concat!(
        r"(?i)(?-u:\b)(human|real person|live agent|a person|manager|supervisor|representative)(?-u:\b)|转人工|人工|真人|客服经理",
        r"|(?-u:\b)(mensch\w*|mitarbeiter\w*|vorgesetzte\w*|echte[nr]? person|humain\w*|une personne|vraie personne|conseill\w*|superviseur|responsable|humano|una persona|persona real|agente|gerente|encargad[oa]|umano|persona reale|operatore|supervisore|responsabile|uma pessoa|pessoa real|atendente|een mens|echte mens|medewerker|echte persoon|leidinggevende)(?-u:\b)",
        r"|人間|オペレーター?|担当者|有人|上司|責任者|상담원|상담사|사람(과|이랑|하고|한테|이 ?필요)|매니저|관리자|책임자|직원(과|이랑|하고|한테)",
    ))
});
static COMPLAINT: LazyLock<Regex> = LazyLock::new(|| {
    re(concat!(
        r"(?i)(?-u:\b)(complain\w*|complaint|unacceptable|terrible|angry|furious|disappointed|still not|never arrived|hasn'?t arrived|not arrived|haven'?t (received|got)|lost|late|delayed?)(?-u:\b)|投诉|不满|太差|一直没|没收到|还没到|没到|丢|延误|太慢",
        r"|(?-u:\b)(beschwer\w*|reklam\w*|unverschamt|inakzeptabel|enttauscht|verargert|wutend|frechheit|(nie|nicht|noch nicht) (angekommen|geliefert|erhalten|da)|verspat\w*|verloren|plainte|reclam\w*|plaindre|inacceptable|decue?|en colere|furieu\w*|(pas|jamais) (encore )?(recu|arrive|livre)e?|toujours pas|retard\w*|perdue?|queja\w*|quejar\w*|inaceptable|decepcionad[oa]|enojad[oa]|enfadad[oa]|furios[oa]|no (me )?(ha|han) llegado|nunca (me )?llego|no (he )?recibido|todavia no|aun no|retras\w*|perdid[oa]|extraviad[oa]|lamentel\w*|lamentar\w*|inaccettabil\w*|delus[oa]|arrabbiat[oa]|non (e|sono) (ancora )?arrivat\w*|mai arrivat\w*|non ho (ancora )?ricevut\w*|ancora non|ritard\w*|pers[oa]|smarrit[oa]|queixa\w*|inaceitavel|irritad[oa]|nao chegou|nunca chegou|nao recebi|ainda nao|atrasad[oa]|atraso|klacht\w*|klagen|onacceptabel|teleurgesteld|woedend|(niet|nooit) (aangekomen|ontvangen|geleverd)|nog steeds niet|vertraagd|vertraging|kwijt)(?-u:\b)",
        r"|苦情|クレーム|不満|届かない|届いていない|届いてない|届いていません|届きません|遅延|紛失|ひどい|最悪|許せない|불만|항의|컴플레인|도착하지 않|안 ?왔|받지 ?못|못 ?받|지연|분실|최악|화가 ?나",
    ))
});
/// Money back, in so many words: "refund", "reverse the charge", "return
/// the money I paid", "Rückerstattung", "remboursement", "返金", "환불", …
static REFUND: LazyLock<Regex> = LazyLock::new(|| {
    re(concat!(
        r"(?i)(?-u:\b)(refund\w*|reimburs\w*|charge ?backs?|(money|payment|funds) (back|returned|refunded|reimbursed)|(give|pay|credit|send|refund)\w* (me|us|it) back|(give|send|pay|credit|transfer|wire)\w* back (the |my |our )?(money|payment|funds|amount)|(return|refund|reimburse)\w* (me )?(the |my |our |all (of )?(the |my )?|what (i|we) )?(money|payment|funds|cash|amount|purchase price|paid)|(reverse|cancel|dispute)\w* (the |this |that |my )?(charge|payment|transaction|purchase)|credit\w* (it |that |this )?back)(?-u:\b)",
        r"|退款|退钱|退錢|退费|退費|返还|还钱|把钱.{0,4}(还|退)",
        r"|(?-u:\b)(ruckerstatt|rueckerstatt|erstattung|erstatten|ruckzahl|rueckzahl|zuruckzahl|zurueckzahl|ruckbuchung|rueckbuchung|gutschrift|(mein|unser) geld|geld (\w+ )?zuru?e?ck|rembours|retrofactur|(mon|notre) argent|rendre l'?argent|reembols|rembols|reintegro|contracargo|(mi|nuestro) dinero|rimbors|storno\w*|stornar\w*|stornat\w*|(i miei|i nostri) soldi|soldi indietro|estorn|ressarc|(meu|nosso) dinheiro|terugbetal|terugstort|terugboek|restitutie|(mijn|ons) geld|geld terug)",
        r"|(?-u:\b)(devol|devuelv|devolv|regres|recuper|restitu|rend)\w*.{0,20}(?-u:\b)(dinero|dinheiro|soldi|denaro|argent|pagamento|pago|paiement)(?-u:\b)",
        r"|返金|払い?戻|お金.{0,6}返|代金.{0,6}返|환불|환급|돈.{0,6}(돌려|반환)|결제.{0,4}취소",
    ))
});
static ORDER: LazyLock<Regex> = LazyLock::new(|| {
    re(concat!(
        r"(?i)(?-u:\b)(order|orders|ord-?\d+|package|parcel|shipment|shipping|delivery|deliver|track\w*|refund)(?-u:\b)|订单|物流|快递|包裹|发货|退款",
        r"|(?-u:\b)(bestellung\w*|paket\w*|lieferung\w*|sendung\w*|commande\w*|colis|livraison\w*|pedido\w*|paquete\w*|envio\w*|entrega\w*|ordine|ordini|pacco|pacchi|spedizion\w*|consegn\w*|encomenda\w*|pacote\w*|bestelling\w*|pakket\w*|levering\w*|zending\w*)(?-u:\b)",
        r"|注文|荷物|配送|配達|주문|택배|배송|소포",
    ))
});
/// Common words of the languages the patterns above cover: a text in Latin
/// letters without any is in a language they do not read.
static KNOWN_WORDS: LazyLock<HashSet<&'static str>> = LazyLock::new(|| {
    [
        // English
        concat!(
            "the an i my me you your is are was it for of and or not please want need ",
            "with this that have has what where when how why can would hello hi thanks ",
            "yes order money paid still we our",
        ),
        // German
        concat!(
            "ich mein meine meinen der die das und nicht ist bitte mit ein eine einen fur ",
            "habe wo wie warum sie mir mich noch kein keine hallo danke bestellung geld",
        ),
        // French
        concat!(
            "je mon ma mes le les une et pas est avec pour du des vous votre bonjour ",
            "merci commande quand comment ai suis moi argent",
        ),
        // Spanish
        concat!(
            "yo mi el los las una es con para del por favor usted hola gracias pedido ",
            "donde cuando como quiero dinero",
        ),
        // Italian
        concat!(
            "io mio mia il lo gli non per di della che ciao grazie ordine dove voglio ",
            "soldi sono ho",
        ),
        // Portuguese
        concat!(
            "eu meu minha os um uma nao com da voce ola obrigado obrigada onde quero ",
            "dinheiro",
        ),
        // Dutch
        concat!(
            "ik mijn het een en niet met voor van uw bedankt bestelling waar wanneer hoe ",
            "wil",
        ),
    ]
    .into_iter()
    .flat_map(str::split_whitespace)
    .collect()
});
static ORDER_ID: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)(?-u:\b)ORD-?(\d+)(?-u:\b)|(?-u:\b)order\s*(?:#|no\.?|number|id)?\s*[:#]?\s*(\d{2,})(?-u:\b)|订单\s*(?:号|编号)?\s*[:：#]?\s*(\d{2,})",
    )
});
static MEMORY: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)(?-u:\b)(remember( that)?|please note( that)?|note that|my name is|i prefer|call me)(?-u:\b)|记住|请记得|记一下|记得我|我喜欢|我偏好|以后请|叫我",
    )
});
static MEMORY_LEAD: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)^\s*(please\s+)?(remember( that)?|note( that)?)\s*[,:]?\s*|^\s*(请)?(记住|记得|记一下)[，,:：]?\s*",
    )
});

/// Whether the text contains CJK ideographs: the customer writes Chinese.
pub fn is_chinese(text: &str) -> bool {
    text.chars().any(is_cjk)
}

fn is_cjk(c: char) -> bool {
    matches!(c as u32, 0x4E00..=0x9FFF | 0x3400..=0x4DBF | 0xF900..=0xFAFF)
}

/// The route node's intent label: escalate beats complaint beats order.
pub fn classify_intent(message: &str) -> Intent {
    let folded = fold(message);
    let text = folded.text.as_str();
    if ESCALATE.is_match(text) {
        Intent::Escalate
    } else if COMPLAINT.is_match(text) {
        Intent::Complaint
    } else if ORDER.is_match(text) || ORDER_ID.is_match(text) {
        Intent::Order
    } else {
        Intent::Consult
    }
}

/// Whether the customer asks for a person.
pub fn wants_human(message: &str) -> bool {
    ESCALATE.is_match(&fold(message).text)
}

/// Whether the message sounds like a complaint or a late/lost delivery.
pub fn sounds_like_complaint(message: &str) -> bool {
    COMPLAINT.is_match(&fold(message).text)
}

/// Whether the customer asks for money back.
pub fn asks_refund(message: &str) -> bool {
    REFUND.is_match(&fold(message).text)
}

/// Whether the message is about orders, parcels or deliveries.
pub fn mentions_order(message: &str) -> bool {
    ORDER.is_match(&fold(message).text)
}

/// What the server's classifiers read in one customer message, the text
/// folded once (the approval policy's `$customer`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Reading {
    pub complaint: bool,
    pub refund: bool,
    pub escalate: bool,
    pub order: bool,
    /// The classifiers cannot vouch for their silence: the text was
    /// disguised, or is mostly in a script or language they do not read.
    pub unsure: bool,
}

/// Reads one customer message (see [`Reading`]).
pub fn read_customer(message: &str) -> Reading {
    let folded = fold(message);
    let text = folded.text.as_str();
    Reading {
        complaint: COMPLAINT.is_match(text),
        refund: REFUND.is_match(text),
        escalate: ESCALATE.is_match(text),
        order: ORDER.is_match(text),
        unsure: folded.disguised || outside_languages(&folded),
    }
}

/// Whether the text is mostly in a script the patterns do not cover
/// (Cyrillic, Arabic, Thai, …), or is Latin text of four words or more of
/// which under a fifth are common words of the covered languages (Polish,
/// Turkish, Swedish, …).
fn outside_languages(folded: &Folded) -> bool {
    if folded.other_letters > folded.covered_letters {
        return true;
    }
    let words: Vec<&str> = folded
        .text
        .split(|c: char| !c.is_alphabetic())
        // "ord" is the prefix of an order id, in no language.
        .filter(|w| !w.is_empty() && *w != "ord" && w.chars().all(is_latin))
        .collect();
    if words.len() < 4 {
        return false;
    }
    let known = words.iter().filter(|w| KNOWN_WORDS.contains(**w)).count();
    known * 5 < words.len()
}

/// The order id the message names, normalised: "ORD-123", "order 123",
/// "订单123" all give `ORD-123`.
pub fn extract_order_id(message: &str) -> Option<String> {
    let caps = ORDER_ID.captures(message)?;
    let digits = caps.iter().skip(1).flatten().next()?.as_str();
    Some(format!("ORD-{digits}"))
}

/// The memory to store when the message is a memory instruction
/// ("remember that …", "记住 …", "please note …", "I prefer …"): the
/// sentence that holds the instruction, without its lead words.
pub fn memory_instruction(message: &str) -> Option<String> {
    let found = MEMORY.find(message)?;
    // The sentence around the match: from the previous sentence end to the next.
    let is_end = |c: char| matches!(c, '.' | '!' | '?' | '。' | '！' | '？' | '\n');
    let start = message[..found.start()]
        .char_indices()
        .rev()
        .find(|&(_, c)| is_end(c))
        .map(|(i, c)| i + c.len_utf8())
        .unwrap_or(0);
    let end = message[found.end()..]
        .char_indices()
        .find(|&(_, c)| is_end(c))
        .map(|(i, _)| found.end() + i)
        .unwrap_or(message.len());
    let sentence = message[start..end].trim();
    let text = MEMORY_LEAD.replace(sentence, "").trim().to_owned();
    (!text.is_empty()).then_some(text)
}

fn tokens(text: &str) -> HashSet<String> {
    let mut out = HashSet::new();
    let mut word = String::new();
    for c in text.chars() {
        if is_cjk(c) {
            if !word.is_empty() {
                out.insert(std::mem::take(&mut word));
            }
            out.insert(c.to_string());
        } else if c.is_alphanumeric() {
            word.extend(c.to_lowercase());
        } else if !word.is_empty() {
            out.insert(std::mem::take(&mut word));
        }
    }
    if !word.is_empty() {
        out.insert(word);
    }
    out
}

/// Jaccard similarity of the word sets of two texts, 0.0 ..= 1.0.
pub fn similarity(a: &str, b: &str) -> f64 {
    if a == b {
        return 1.0;
    }
    let (ta, tb) = (tokens(a), tokens(b));
    if ta.is_empty() && tb.is_empty() {
        return 1.0;
    }
    let inter = ta.intersection(&tb).count() as f64;
    let union = ta.union(&tb).count() as f64;
    inter / union
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intents_follow_the_seed_labels() {
        assert_eq!(
            classify_intent("订单123一直没到，我要投诉"),
            Intent::Complaint
        );
        assert_eq!(classify_intent("Where is my order ORD-5?"), Intent::Order);
        assert_eq!(
            classify_intent("What is your return policy?"),
            Intent::Consult
        );
        assert_eq!(
            classify_intent("I want to talk to a human"),
            Intent::Escalate
        );
        assert_eq!(classify_intent("转人工"), Intent::Escalate);
        assert_eq!(
            classify_intent("Hi, my order ORD-123 hasn't arrived yet"),
            Intent::Complaint
        );
    }

    #[test]
    fn other_languages_and_disguises_are_read() {
        for (text, intent) in [
            ("Ich möchte mit einem Menschen sprechen", Intent::Escalate),
            ("Je veux parler à un conseiller", Intent::Escalate),
            ("Quiero hablar con un agente", Intent::Escalate),
            ("人間のオペレーターと話したい", Intent::Escalate),
            ("상담원 연결해 주세요", Intent::Escalate),
            ("I want a h\u{200b}uman", Intent::Escalate),
            ("Mein Paket ist verspätet", Intent::Complaint),
            ("Il pacco non è arrivato", Intent::Complaint),
            ("Minha encomenda não chegou", Intent::Complaint),
            ("Mijn pakket is niet aangekomen", Intent::Complaint),
            ("This is unacc\u{0435}ptable", Intent::Complaint),
            ("Where is my ｏｒｄｅｒ?", Intent::Order),
            ("Wo ist meine Bestellung?", Intent::Order),
            ("Quelle est votre politique ?", Intent::Consult),
        ] {
            assert_eq!(classify_intent(text), intent, "{text}");
        }
        for refund in [
            "Rückerstattung bitte",
            "Rueckerstattung bitte",
            "Ich will mein Geld zurück",
            "Remboursez-moi",
            "Devuélvanme el dinero",
            "Voglio un rimborso",
            "Quero o estorno",
            "Ik wil mijn geld terug",
            "返金してください",
            "환불해 주세요",
            "退錢",
            "I want my money back",
            "Give me back my money",
            "Please reverse the charge",
            "Return the money I paid",
            "r e f u n d",
        ] {
            assert!(asks_refund(refund), "{refund}");
        }
        for not_refund in [
            "What is your return policy?",
            "How do I pay the amount due?",
            "I will return the item",
        ] {
            assert!(!asks_refund(not_refund), "{not_refund}");
        }
    }

    #[test]
    fn unsure_when_disguised_or_in_another_language() {
        for unsure in [
            "Zamówienie ORD-123 nie dotarło do mnie na czas",
            "Siparişim ORD-123 hala gelmedi, çok kızgınım",
            "Верните деньги",
            "طلبي لم يصل",
            "Ple\u{200b}ase",
        ] {
            assert!(read_customer(unsure).unsure, "{unsure}");
        }
        for sure in [
            "Where is my order ORD-123?",
            "ok",
            "Mi pedido ORD-123 no ha llegado todavía",
            "我的订单ORD-123什么时候到？",
            "주문 ORD-123 언제 도착해요?",
        ] {
            assert!(!read_customer(sure).unsure, "{sure}");
        }
    }

    #[test]
    fn order_ids_are_normalised() {
        assert_eq!(
            extract_order_id("order 123 is late").as_deref(),
            Some("ORD-123")
        );
        assert_eq!(
            extract_order_id("订单123一直没到").as_deref(),
            Some("ORD-123")
        );
        assert_eq!(extract_order_id("订单号：456").as_deref(), Some("ORD-456"));
        assert_eq!(extract_order_id("see ord-77").as_deref(), Some("ORD-77"));
        assert_eq!(extract_order_id("ORD123").as_deref(), Some("ORD-123"));
        assert_eq!(extract_order_id("hello there"), None);
    }

    #[test]
    fn memory_instructions_in_both_languages() {
        assert_eq!(
            memory_instruction("Hi. Please remember that I prefer email. Thanks").as_deref(),
            Some("I prefer email")
        );
        assert_eq!(
            memory_instruction("记住我只在周末收货。").as_deref(),
            Some("我只在周末收货")
        );
        assert_eq!(
            memory_instruction("please note my flat is on floor 3").as_deref(),
            Some("my flat is on floor 3")
        );
        assert_eq!(memory_instruction("Where is my parcel?"), None);
    }

    #[test]
    fn similarity_is_jaccard_over_words() {
        assert_eq!(similarity("{\"a\":1}", "{\"a\":1}"), 1.0);
        assert!(similarity("order ORD-1 delayed", "order ORD-1 delayed now") > 0.7);
        assert!(similarity("order ORD-1", "ticket TCK-9") < 0.2);
        assert!(is_chinese("订单") && !is_chinese("order"));
    }
}
