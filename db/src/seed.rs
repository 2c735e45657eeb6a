//! The demo company ("Northwind Gadgets" / 北风数码), inserted on first start.
//!
//! Seeding is idempotent: every row has a natural key and is inserted with
//! `ON CONFLICT DO NOTHING`, and an order's items and logistics events are
//! written only when the order itself was new. Times are relative to the
//! moment of seeding, so a fresh demo always has a parcel stuck "for days".
//! ORD-123 (the order of the product's walkthrough) is delayed: stuck at the Wuhan sorting
//! centre for five days, past its promised date.

use chrono::{Duration, Utc};

use crate::{now, search, Database, DbError};

/// What a seeding run inserted (all zero when the data was already there).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SeedReport {
    pub customers: u64,
    pub orders: u64,
    pub articles: u64,
}

struct SeedCustomer {
    id: &'static str,
    name: &'static str,
    email: &'static str,
    phone: &'static str,
    lang: &'static str,
    tier: &'static str,
    city: &'static str,
}

const CUSTOMERS: &[SeedCustomer] = &[
    SeedCustomer {
        id: "CUST-001",
        name: "李伟 (Li Wei)",
        email: "li.wei@example.com",
        phone: "+86 138 0000 0123",
        lang: "zh",
        tier: "gold",
        city: "Beijing",
    },
    SeedCustomer {
        id: "CUST-002",
        name: "Emma Johnson",
        email: "emma.johnson@example.com",
        phone: "+1 415 555 0102",
        lang: "en",
        tier: "standard",
        city: "San Francisco",
    },
    SeedCustomer {
        id: "CUST-003",
        name: "王芳 (Wang Fang)",
        email: "wang.fang@example.com",
        phone: "+86 139 0000 0456",
        lang: "zh",
        tier: "standard",
        city: "Shanghai",
    },
    SeedCustomer {
        id: "CUST-004",
        name: "Lucas Martin",
        email: "lucas.martin@example.com",
        phone: "+33 6 12 34 56 78",
        lang: "en",
        tier: "gold",
        city: "Lyon",
    },
    SeedCustomer {
        id: "CUST-005",
        name: "张敏 (Zhang Min)",
        email: "zhang.min@example.com",
        phone: "+86 137 0000 0789",
        lang: "zh",
        tier: "standard",
        city: "Chengdu",
    },
    SeedCustomer {
        id: "CUST-006",
        name: "Priya Sharma",
        email: "priya.sharma@example.com",
        phone: "+44 20 7946 0958",
        lang: "en",
        tier: "standard",
        city: "London",
    },
    SeedCustomer {
        id: "CUST-007",
        name: "陈静 (Chen Jing)",
        email: "chen.jing@example.com",
        phone: "+86 136 0000 0321",
        lang: "zh",
        tier: "gold",
        city: "Guangzhou",
    },
    SeedCustomer {
        id: "CUST-008",
        name: "Noah Williams",
        email: "noah.williams@example.com",
        phone: "+1 212 555 0199",
        lang: "en",
        tier: "standard",
        city: "New York",
    },
    SeedCustomer {
        id: "CUST-009",
        name: "刘洋 (Liu Yang)",
        email: "liu.yang@example.com",
        phone: "+86 135 0000 0654",
        lang: "zh",
        tier: "standard",
        city: "Hangzhou",
    },
    SeedCustomer {
        id: "CUST-010",
        name: "Sofia Rossi",
        email: "sofia.rossi@example.com",
        phone: "+39 02 1234 5678",
        lang: "en",
        tier: "standard",
        city: "Milan",
    },
];

/// The catalogue: sku, name, price in cents.
const PRODUCTS: &[(&str, &str, i64)] = &[
    ("NW-PHN-12", "Northwind Phone 12 (128 GB)", 459_900),
    ("NW-BUD-02", "Wireless Earbuds Pro", 89_900),
    ("NW-WAT-05", "Smart Watch S5", 129_900),
    ("NW-CHG-65", "65 W USB-C Charger", 19_900),
    ("NW-CBL-2M", "USB-C Cable 2 m", 4_900),
    ("NW-TAB-11", "Northwind Tab 11", 269_900),
    ("NW-SPK-MN", "Mini Bluetooth Speaker", 29_900),
    ("NW-KBD-MX", "Mechanical Keyboard MX", 59_900),
    ("NW-CAS-12", "Phone 12 Silicone Case", 9_900),
    ("NW-PWB-20", "Power Bank 20000 mAh", 24_900),
];

const CARRIERS: &[(&str, &str)] = &[
    ("SF Express", "SF"),
    ("YTO Express", "YT"),
    ("DHL eCommerce", "DH"),
    ("ZTO Express", "ZT"),
];

/// One logistics event: hours before seeding, location, status, text, anomaly.
type Ev = (i64, &'static str, &'static str, String, bool);

struct SeedOrder {
    id: String,
    customer: usize,
    status: &'static str,
    /// (product index, quantity)
    items: Vec<(usize, i64)>,
    placed_hours_ago: i64,
    /// Promised delivery, hours from seeding (negative: in the past).
    promised_in_hours: Option<i64>,
    delivered_hours_ago: Option<i64>,
    anomaly: Option<String>,
    events: Vec<Ev>,
}

fn ev(hours_ago: i64, location: &'static str, status: &'static str, text: &str) -> Ev {
    (hours_ago, location, status, text.to_owned(), false)
}

fn anomaly_ev(hours_ago: i64, location: &'static str, text: &str) -> Ev {
    (hours_ago, location, "exception", text.to_owned(), true)
}

/// The first hops every parcel makes, from the Shenzhen warehouse.
fn first_hops(placed: i64) -> Vec<Ev> {
    vec![
        ev(
            placed - 6,
            "Shenzhen warehouse",
            "picked_up",
            "Parcel picked up by the carrier",
        ),
        ev(
            placed - 12,
            "Shenzhen hub",
            "in_transit",
            "Departed the Shenzhen hub",
        ),
    ]
}

fn order_123() -> SeedOrder {
    let placed = 9 * 24;
    SeedOrder {
        id: "ORD-123".into(),
        customer: 0,
        status: "delayed",
        items: vec![(1, 1), (3, 1)],
        placed_hours_ago: placed,
        promised_in_hours: Some(-3 * 24),
        delivered_hours_ago: None,
        anomaly: Some(
            "Stuck at the Wuhan sorting centre for 5 days (sorting backlog); the promised delivery date has passed"
                .into(),
        ),
        events: vec![
            ev(placed - 6, "Shenzhen warehouse", "picked_up", "Parcel picked up by the carrier"),
            ev(placed - 12, "Shenzhen hub", "in_transit", "Departed the Shenzhen hub"),
            ev(7 * 24, "Wuhan sorting centre", "at_sorting_center", "Arrived at the Wuhan sorting centre"),
            anomaly_ev(
                5 * 24,
                "Wuhan sorting centre",
                "Held at the Wuhan sorting centre: sorting backlog, no onward scan since",
            ),
        ],
    }
}

/// A few dozen orders cycling through every state, with timelines to match.
fn orders() -> Vec<SeedOrder> {
    let mut out = vec![order_123()];
    let kinds = [
        "delivered",
        "in_transit",
        "delayed",
        "delivered",
        "lost",
        "refunded",
        "processing",
        "shipped",
        "delivered",
        "in_transit",
    ];
    let delays = [
        (
            "Zhengzhou sorting centre",
            "Held at the Zhengzhou sorting centre: sorting backlog after a holiday peak",
        ),
        (
            "Shanghai customs",
            "Held by customs for inspection; documents requested from the sender",
        ),
        (
            "Hangzhou hub",
            "Severe weather: line-haul trucks suspended, parcel waiting at the Hangzhou hub",
        ),
    ];
    for n in 0..35_i64 {
        let idx = usize::try_from(n).unwrap_or_default();
        let id = if n < 5 {
            format!("ORD-{}", 124 + n)
        } else {
            format!("ORD-{}", 1000 + n)
        };
        let kind = kinds[idx % kinds.len()];
        let customer = (idx * 3 + 1) % CUSTOMERS.len();
        let items = vec![
            (idx % PRODUCTS.len(), 1),
            ((idx * 7 + 3) % PRODUCTS.len(), 1 + n % 2),
        ];
        let age = 24 * (2 + (n * 5) % 20); // placed 2..21 days ago
        let mut o = SeedOrder {
            id,
            customer,
            status: kind,
            items,
            placed_hours_ago: age,
            promised_in_hours: Some(-age + 24 * 5),
            delivered_hours_ago: None,
            anomaly: None,
            events: Vec::new(),
        };
        match kind {
            "processing" => {
                o.placed_hours_ago = 20;
                o.promised_in_hours = Some(24 * 5);
            }
            "shipped" => {
                o.placed_hours_ago = 30;
                o.promised_in_hours = Some(24 * 4);
                o.events = vec![ev(
                    24,
                    "Shenzhen warehouse",
                    "picked_up",
                    "Parcel picked up by the carrier",
                )];
            }
            "in_transit" => {
                o.placed_hours_ago = 72;
                o.promised_in_hours = Some(48);
                o.events = first_hops(72);
                o.events.push(ev(
                    30,
                    "Nanjing sorting centre",
                    "at_sorting_center",
                    "Arrived at the Nanjing sorting centre",
                ));
                o.events.push(ev(
                    20,
                    "Nanjing sorting centre",
                    "in_transit",
                    "Departed the Nanjing sorting centre",
                ));
            }
            "delivered" => {
                let age = o.placed_hours_ago.max(96);
                o.placed_hours_ago = age;
                o.promised_in_hours = Some(-age + 24 * 5);
                o.delivered_hours_ago = Some(age - 72);
                o.events = first_hops(age);
                o.events.push(ev(
                    age - 40,
                    "Regional sorting centre",
                    "at_sorting_center",
                    "Arrived at the regional sorting centre",
                ));
                o.events.push(ev(
                    age - 64,
                    "Local depot",
                    "out_for_delivery",
                    "Out for delivery",
                ));
                o.events.push(ev(
                    age - 72,
                    "Customer address",
                    "delivered",
                    "Delivered, signed for by the recipient",
                ));
            }
            "delayed" => {
                let (place, text) = delays[idx % delays.len()];
                o.placed_hours_ago = 8 * 24;
                o.promised_in_hours = Some(-24);
                o.anomaly = Some(format!("{text} (no movement for 4 days)"));
                o.events = first_hops(8 * 24);
                o.events.push(ev(
                    5 * 24,
                    place,
                    "at_sorting_center",
                    "Arrived at the next facility",
                ));
                o.events.push(anomaly_ev(4 * 24, place, text));
            }
            "lost" => {
                o.placed_hours_ago = 24 * 24;
                o.promised_in_hours = Some(-24 * 19);
                o.anomaly = Some("No scan for 18 days; the carrier declared the parcel lost and opened an investigation".into());
                o.events = first_hops(24 * 24);
                o.events.push(ev(
                    20 * 24,
                    "Changsha sorting centre",
                    "at_sorting_center",
                    "Arrived at the Changsha sorting centre",
                ));
                o.events.push(anomaly_ev(
                    2 * 24,
                    "Changsha sorting centre",
                    "Parcel declared lost by the carrier; investigation opened",
                ));
            }
            "refunded" => {
                o.placed_hours_ago = 25 * 24;
                o.promised_in_hours = Some(-20 * 24);
                o.delivered_hours_ago = Some(21 * 24);
                o.events = first_hops(25 * 24);
                o.events.push(ev(
                    21 * 24,
                    "Customer address",
                    "delivered",
                    "Delivered, signed for by the recipient",
                ));
                o.events.push(ev(
                    15 * 24,
                    "Customer address",
                    "returned",
                    "Return picked up from the customer",
                ));
                o.events.push(ev(
                    12 * 24,
                    "Shenzhen warehouse",
                    "returned",
                    "Return received at the warehouse; refund issued",
                ));
            }
            _ => {}
        }
        out.push(o);
    }
    out
}

/// slug, lang, category, title, body.
const ARTICLES: &[(&str, &str, &str, &str, &str)] = &[
    ("shipping-times-en", "en", "shipping", "Shipping times and carriers",
     "Orders ship from our Shenzhen warehouse within 24 hours on working days. Standard shipping takes 3 to 5 working days within mainland China and 7 to 12 days internationally; express shipping takes 1 to 2 days. We ship with SF Express, YTO Express, ZTO Express and DHL eCommerce. The promised delivery date is shown on the order. Tracking numbers are sent by email once the carrier picks up the parcel."),
    ("shipping-times-zh", "zh", "shipping", "配送时效与快递公司",
     "工作日下单后24小时内从深圳仓库发货。中国大陆标准配送3至5个工作日，国际配送7至12天；加急配送1至2天。合作快递包括顺丰速运、圆通速递、中通快递和DHL电商。订单页面显示承诺送达时间。快递揽收后，我们会通过邮件发送运单号。"),
    ("delayed-parcel-en", "en", "shipping", "My parcel is delayed or stuck",
     "If tracking shows no movement for more than 48 hours, or the promised delivery date has passed, the parcel is treated as delayed. Common causes are a sorting backlog at a sorting centre, customs inspection and severe weather. We contact the carrier to expedite the parcel. If it has not moved for 7 days it is investigated as possibly lost. A customer may open a complaint for a delayed order; complaints are reviewed by a supervisor and answered within 24 hours. Gold customers receive a shipping refund for orders delivered more than 3 days late."),
    ("delayed-parcel-zh", "zh", "shipping", "包裹延误或物流停滞怎么办",
     "如果物流信息超过48小时没有更新，或已超过承诺送达时间，即视为物流延误。常见原因有分拣中心积压、海关查验和恶劣天气。我们会联系快递公司加急处理。包裹7天无更新将按疑似丢件调查。客户可以就延误订单提出投诉，投诉工单由主管审核并在24小时内答复。金卡客户的订单延误超过3天可退还运费。"),
    ("returns-policy-en", "en", "returns", "Returns policy",
     "You can return most items within 30 days of delivery if they are unused and in their original packaging. Opened earbuds cannot be returned for hygiene reasons unless they are faulty. Start a return from your order page or ask support; we email a prepaid return label. Faulty items can be returned within 12 months under warranty. Returns are inspected within 3 working days of arrival at the warehouse."),
    ("returns-policy-zh", "zh", "returns", "退货政策",
     "大多数商品在签收后30天内、未使用且包装完好的情况下可以退货。出于卫生原因，已拆封的耳机除非有质量问题否则不支持退货。可在订单页面发起退货，或联系客服；我们会通过邮件发送预付退货面单。质量问题商品在12个月保修期内可退换。退货到达仓库后3个工作日内完成检验。"),
    ("refund-policy-en", "en", "refunds", "Refund policy: when and how refunds are paid",
     "Refunds go back to the original payment method. After a return passes inspection the refund is issued within 2 working days; banks take 3 to 7 working days to show it. A parcel declared lost by the carrier is refunded in full, or replaced if the customer prefers. Refunds above 1000 CNY and refunds without a return need a supervisor's approval. Shipping fees are refunded when the item was faulty or the delivery was late."),
    ("refund-policy-zh", "zh", "refunds", "退款政策与到账时间",
     "退款将原路返回至支付账户。退货检验通过后2个工作日内发起退款，银行到账需3至7个工作日。快递公司确认丢件的包裹全额退款，客户也可以选择补发。超过1000元的退款以及无需退货的退款需要主管审批。商品有质量问题或配送延误时，运费一并退还。"),
    ("complaints-en", "en", "complaints", "How complaints are handled",
     "Every complaint becomes a ticket with a ticket number the customer can quote. Complaint tickets are reviewed by a supervisor before they are opened, so that the right team handles them. We acknowledge a complaint at once and give a first answer within 24 hours. For a delayed or lost order we check the logistics timeline, contact the carrier and offer compensation under the refund policy where it applies."),
    ("complaints-zh", "zh", "complaints", "投诉处理流程",
     "每一条投诉都会生成工单，客户可凭工单号查询进度。投诉工单由主管审核后开立，以便交给合适的团队处理。我们会立即确认收到投诉，并在24小时内给出首次答复。对于物流延误或丢件的订单，我们会核查物流轨迹、联系快递公司，并按退款政策提供相应补偿。"),
    ("escalation-en", "en", "escalation", "Talking to a person (escalation)",
     "The AI assistant handles most questions. A customer can ask for a human agent at any time; the conversation is then marked as waiting for a human and a support agent takes over, usually within 10 minutes during opening hours (9:00 to 21:00 China time, every day). Cases involving safety, legal threats or repeated failed deliveries are always escalated."),
    ("escalation-zh", "zh", "escalation", "转人工客服",
     "AI助手可以处理大部分问题。客户可以随时要求转人工，会话将标记为等待人工，客服人员会接手处理，营业时间内（北京时间每天9:00至21:00）通常10分钟内响应。涉及安全问题、法律纠纷或多次配送失败的情况一律转人工处理。"),
    ("order-tracking-en", "en", "orders", "Tracking an order",
     "Give us your order number (for example ORD-123) and we will show the order status, the items, the promised delivery date and every logistics event. Order statuses are: processing, shipped, in transit, delayed, delivered, lost and refunded."),
    ("order-tracking-zh", "zh", "orders", "如何查询订单物流",
     "提供订单号（例如ORD-123），我们即可查询订单状态、商品、承诺送达时间以及全部物流轨迹。订单状态包括：处理中、已发货、运输中、延误、已签收、丢件和已退款。"),
];

/// Inserts the demo company unless it is already there.
#[tracing::instrument(skip_all, fields(backend = db.backend()))]
pub async fn seed(db: &Database) -> Result<SeedReport, DbError> {
    let base = Utc::now();
    let at = |hours_ago: i64| base - Duration::hours(hours_ago);
    let orders = orders();
    let mut report = SeedReport::default();
    with_pool!(db, pool => {
        // One transaction: a crash mid-seed leaves nothing half written.
        let mut tx = pool.begin().await?;
        for (i, c) in CUSTOMERS.iter().enumerate() {
            let days = i64::try_from(i).unwrap_or_default();
            report.customers += sqlx::query(
                "INSERT INTO customers (id, name, email, phone, lang, tier, created_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (id) DO NOTHING",
            )
            .bind(c.id).bind(c.name).bind(c.email).bind(c.phone).bind(c.lang).bind(c.tier)
            .bind(at(24 * (400 - 20 * days)))
            .execute(&mut *tx)
            .await?
            .rows_affected();
        }
        for (n, o) in orders.iter().enumerate() {
            let c = &CUSTOMERS[o.customer];
            let total: i64 = o.items.iter().map(|(p, q)| PRODUCTS[*p].2 * q).sum();
            let (carrier, prefix) = CARRIERS[n % CARRIERS.len()];
            let shipped = !o.events.is_empty();
            let tracking = shipped.then(|| format!("{prefix}{}", 7_300_000_000_i64 + 7919 * i64::try_from(n).unwrap_or_default()));
            let inserted = sqlx::query(
                "INSERT INTO orders (id, customer_id, status, total_cents, currency, carrier, tracking_number, \
                 shipping_address, placed_at, promised_by, delivered_at, anomaly) \
                 VALUES ($1, $2, $3, $4, 'CNY', $5, $6, $7, $8, $9, $10, $11) ON CONFLICT (id) DO NOTHING",
            )
            .bind(&o.id).bind(c.id).bind(o.status).bind(total)
            .bind(shipped.then_some(carrier)).bind(tracking)
            .bind(format!("{} Road {}, {}", 10 + n, c.city, c.city))
            .bind(at(o.placed_hours_ago))
            .bind(o.promised_in_hours.map(|h| at(-h)))
            .bind(o.delivered_hours_ago.map(at))
            .bind(&o.anomaly)
            .execute(&mut *tx)
            .await?
            .rows_affected();
            if inserted == 0 {
                continue;
            }
            report.orders += 1;
            for (p, q) in &o.items {
                let (sku, name, price) = PRODUCTS[*p];
                sqlx::query(
                    "INSERT INTO order_items (order_id, sku, name, quantity, unit_price_cents) \
                     VALUES ($1, $2, $3, $4, $5)",
                )
                .bind(&o.id).bind(sku).bind(name).bind(*q).bind(price)
                .execute(&mut *tx)
                .await?;
            }
            for (hours_ago, location, status, text, is_anomaly) in &o.events {
                sqlx::query(
                    "INSERT INTO logistics_events (order_id, at, location, status, description, is_anomaly) \
                     VALUES ($1, $2, $3, $4, $5, $6)",
                )
                .bind(&o.id).bind(at(*hours_ago)).bind(*location).bind(*status).bind(text).bind(*is_anomaly)
                .execute(&mut *tx)
                .await?;
            }
        }
        for (slug, lang, category, title, body) in ARTICLES {
            report.articles += sqlx::query(
                "INSERT INTO knowledge_articles (slug, lang, category, title, body, search_text, updated_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (slug) DO NOTHING",
            )
            .bind(*slug).bind(*lang).bind(*category).bind(*title).bind(*body)
            .bind(search::index_text(title, body))
            .bind(now())
            .execute(&mut *tx)
            .await?
            .rows_affected();
        }
        tx.commit().await?;
    });
    if report != SeedReport::default() {
        tracing::info!(
            customers = report.customers,
            orders = report.orders,
            articles = report.articles,
            "seeded the demo company"
        );
    }
    Ok(report)
}

/// How many orders the seed has (for tests and the README).
pub fn seed_order_count() -> usize {
    orders().len()
}
