//! Chinese for what the carriers write in English: carrier names, event
//! codes, places, and the scan and anomaly sentences of the demo company's
//! data (db/src/seed.rs) and of the test fakes (crate::testing).
//!
//! A sentence is translated whole or not at all: [`sentence`] returns `None`
//! for anything it does not know, and the reply then quotes the carrier's
//! words as a quotation instead of mixing languages mid-sentence.

use std::sync::LazyLock;

use regex::Regex;

// The patterns are literals checked by the tests below.
#[allow(clippy::expect_used)]
fn re(pattern: &str) -> Regex {
    Regex::new(pattern).expect("static regex")
}

static NO_MOVEMENT: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?i)^(.+?)\s*\(no movement for (\d+) days?\)$"));
static STUCK: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)^stuck at (?:the )?(.+?) for (\d+) days? \((.+)\); the promised delivery date has passed$",
    )
});
static NO_SCAN_LOST: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)^no scan for (\d+) days?; the carrier declared the parcel lost and opened an investigation$",
    )
});
static HELD_AT: LazyLock<Regex> = LazyLock::new(|| re(r"(?i)^held at (?:the )?(.+?): (.+)$"));
static WEATHER: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?i)^severe weather: line-haul trucks suspended, parcel waiting at (?:the )?(.+)$")
});
static ARRIVED: LazyLock<Regex> = LazyLock::new(|| re(r"(?i)^arrived at (?:the )?(.+)$"));
static DEPARTED: LazyLock<Regex> = LazyLock::new(|| re(r"(?i)^departed (?:from )?(?:the )?(.+)$"));

/// Whole sentences, lowercase.
const SENTENCES: &[(&str, &str)] = &[
    ("parcel picked up by the carrier", "快递员已揽收"),
    ("out for delivery", "正在派送"),
    (
        "delivered, signed for by the recipient",
        "已签收，收件人已签字",
    ),
    (
        "parcel declared lost by the carrier; investigation opened",
        "快递公司已确认包裹丢失，正在调查",
    ),
    ("return picked up from the customer", "已从客户处取回退货"),
    (
        "return received at the warehouse; refund issued",
        "仓库已收到退货，退款已发起",
    ),
    (
        "held by customs for inspection; documents requested from the sender",
        "海关查验中，已要求寄件方补充材料",
    ),
    (
        "the parcel has not moved for more than two days",
        "包裹已超过两天没有移动",
    ),
];

/// Why a parcel is held, lowercase.
const REASONS: &[(&str, &str)] = &[
    ("sorting backlog", "分拣积压"),
    (
        "sorting backlog, no onward scan since",
        "分拣积压，此后没有新的扫描记录",
    ),
    (
        "sorting backlog after a holiday peak",
        "节假日高峰后分拣积压",
    ),
];

const CITIES: &[(&str, &str)] = &[
    ("shenzhen", "深圳"),
    ("wuhan", "武汉"),
    ("nanjing", "南京"),
    ("zhengzhou", "郑州"),
    ("changsha", "长沙"),
    ("hangzhou", "杭州"),
    ("shanghai", "上海"),
    ("hong kong", "香港"),
    ("beijing", "北京"),
    ("guangzhou", "广州"),
    ("chengdu", "成都"),
    ("regional", "区域"),
    ("local", "本地"),
];

/// Kinds of facility, longest first so that "sorting centre" wins over "centre".
const FACILITIES: &[(&str, &str)] = &[
    ("sorting centre", "分拣中心"),
    ("sorting center", "分拣中心"),
    ("warehouse", "仓库"),
    ("customs", "海关"),
    ("depot", "配送网点"),
    ("hub", "转运中心"),
];

const PLACES: &[(&str, &str)] = &[
    ("customer address", "收货地址"),
    ("next facility", "下一站点"),
    ("front door", "门口"),
];

/// The carrier's Chinese name.
pub fn carrier(name: &str) -> Option<&'static str> {
    Some(match name.trim().to_lowercase().as_str() {
        "sf express" => "顺丰速运",
        "yto express" => "圆通速递",
        "zto express" => "中通快递",
        "dhl ecommerce" => "DHL电商",
        _ => return None,
    })
}

/// An event or order code in Chinese.
pub fn code(code: &str) -> Option<&'static str> {
    Some(match code {
        "picked_up" => "已揽收",
        "in_transit" => "运输中",
        "at_sorting_center" => "到达分拣中心",
        "out_for_delivery" => "派送中",
        "delivered" => "已签收",
        "exception" => "物流异常",
        "returned" => "已退回",
        "label_created" => "已生成运单",
        "lost" => "丢失",
        "delayed" => "延误",
        "refunded" => "已退款",
        "shipped" => "已发货",
        "processing" => "备货中",
        _ => return None,
    })
}

/// A place in Chinese: "Wuhan sorting centre" → 武汉分拣中心.
pub fn place(en: &str) -> Option<String> {
    let lower = en.trim().to_lowercase();
    let name = lower.strip_prefix("the ").unwrap_or(&lower);
    if let Some((_, zh)) = PLACES.iter().find(|(p, _)| *p == name) {
        return Some((*zh).to_owned());
    }
    if let Some((_, zh)) = CITIES.iter().find(|(c, _)| *c == name) {
        return Some((*zh).to_owned());
    }
    let (kind, zh_kind) = FACILITIES.iter().find(|(k, _)| name.ends_with(k))?;
    let city = name[..name.len() - kind.len()].trim();
    if city.is_empty() {
        return Some((*zh_kind).to_owned());
    }
    let (_, zh_city) = CITIES.iter().find(|(c, _)| *c == city)?;
    Some(format!("{zh_city}{zh_kind}"))
}

fn reason(en: &str) -> Option<&'static str> {
    let lower = en.trim().to_lowercase();
    REASONS.iter().find(|(r, _)| *r == lower).map(|(_, zh)| *zh)
}

/// A carrier's or the shop's sentence in Chinese, when it is known whole.
pub fn sentence(en: &str) -> Option<String> {
    let text = en.trim().trim_end_matches(['.', ' ']);
    let lower = text.to_lowercase();
    if let Some((_, zh)) = SENTENCES.iter().find(|(s, _)| *s == lower) {
        return Some((*zh).to_owned());
    }
    if let Some(c) = NO_MOVEMENT.captures(text) {
        return Some(format!(
            "{}（已 {} 天没有物流更新）",
            sentence(&c[1])?,
            &c[2]
        ));
    }
    if let Some(c) = STUCK.captures(text) {
        return Some(format!(
            "在{}滞留 {} 天（{}），已超过承诺送达时间",
            place(&c[1])?,
            &c[2],
            reason(&c[3])?
        ));
    }
    if let Some(c) = NO_SCAN_LOST.captures(text) {
        return Some(format!(
            "已 {} 天没有扫描记录，快递公司已确认丢件并启动调查",
            &c[1]
        ));
    }
    if let Some(c) = WEATHER.captures(text) {
        return Some(format!(
            "恶劣天气导致干线运输暂停，包裹在{}等待",
            place(&c[1])?
        ));
    }
    if let Some(c) = HELD_AT.captures(text) {
        return Some(format!("滞留在{}（{}）", place(&c[1])?, reason(&c[2])?));
    }
    if let Some(c) = ARRIVED.captures(text) {
        return Some(format!("已到达{}", place(&c[1])?));
    }
    if let Some(c) = DEPARTED.captures(text) {
        return Some(format!("已离开{}", place(&c[1])?));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every event and anomaly sentence the demo data writes (db/src/seed.rs).
    const SEED: &[&str] = &[
        "Parcel picked up by the carrier",
        "Departed the Shenzhen hub",
        "Arrived at the Wuhan sorting centre",
        "Held at the Wuhan sorting centre: sorting backlog, no onward scan since",
        "Stuck at the Wuhan sorting centre for 5 days (sorting backlog); the promised delivery date has passed",
        "Arrived at the Nanjing sorting centre",
        "Departed the Nanjing sorting centre",
        "Arrived at the regional sorting centre",
        "Out for delivery",
        "Delivered, signed for by the recipient",
        "Arrived at the next facility",
        "Held at the Zhengzhou sorting centre: sorting backlog after a holiday peak",
        "Held at the Zhengzhou sorting centre: sorting backlog after a holiday peak (no movement for 4 days)",
        "Held by customs for inspection; documents requested from the sender (no movement for 4 days)",
        "Severe weather: line-haul trucks suspended, parcel waiting at the Hangzhou hub",
        "Severe weather: line-haul trucks suspended, parcel waiting at the Hangzhou hub (no movement for 4 days)",
        "No scan for 18 days; the carrier declared the parcel lost and opened an investigation",
        "Arrived at the Changsha sorting centre",
        "Parcel declared lost by the carrier; investigation opened",
        "Return picked up from the customer",
        "Return received at the warehouse; refund issued",
        "the parcel has not moved for more than two days",
    ];

    #[test]
    fn every_sentence_of_the_demo_data_has_a_translation() {
        for en in SEED {
            let zh = sentence(en).unwrap_or_else(|| panic!("no translation for {en:?}"));
            assert!(
                !zh.chars().any(|c| c.is_ascii_alphabetic()),
                "{en:?} → {zh:?}"
            );
        }
    }

    #[test]
    fn translations_keep_the_facts() {
        assert_eq!(
            sentence("Stuck at the Wuhan sorting centre for 5 days (sorting backlog); the promised delivery date has passed").as_deref(),
            Some("在武汉分拣中心滞留 5 天（分拣积压），已超过承诺送达时间")
        );
        assert_eq!(
            sentence("Arrived at Wuhan hub").as_deref(),
            Some("已到达武汉转运中心")
        );
        assert_eq!(place("Hong Kong hub").as_deref(), Some("香港转运中心"));
        assert_eq!(place("Regional hub").as_deref(), Some("区域转运中心"));
        assert_eq!(carrier("SF Express"), Some("顺丰速运"));
    }

    #[test]
    fn unknown_text_is_not_half_translated() {
        assert_eq!(sentence("Arrived at Atlantis depot"), None);
        assert_eq!(sentence("Held at the Wuhan hub: a dragon sat on it"), None);
        assert_eq!(sentence("Something else happened"), None);
        assert_eq!(code("teleported"), None);
    }
}
