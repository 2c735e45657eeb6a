//! The demo model's Chinese. Carrier text is rendered through
//! [`super::carrier_zh`]; what it cannot translate is quoted (“…”), never
//! mixed into a Chinese sentence.

use chrono::{DateTime, Utc};

use super::carrier_zh;
use super::{Article, Company, Event, Order, System, Tracking, Voice};
use crate::demo::read::Question;
use crate::support::heuristics::is_chinese;

pub struct Zh;

/// An order status in Chinese.
pub fn status(code: &str) -> String {
    match code {
        "delivered" => "已签收".into(),
        "shipped" => "已发货".into(),
        "in_transit" => "运输中".into(),
        "delayed" => "运输延误".into(),
        "lost" => "在运输途中丢失".into(),
        "refunded" => "已退款".into(),
        "processing" => "正在备货".into(),
        other => format!("“{other}”"),
    }
}

fn date(d: &DateTime<Utc>) -> String {
    d.format("%Y年%-m月%-d日").to_string()
}

/// Quotes text that is not Chinese.
fn quoted(text: &str) -> String {
    if is_chinese(text) {
        text.to_owned()
    } else {
        format!("“{text}”")
    }
}

/// The event in Chinese: the carrier's sentence translated, or its code and
/// place, or the carrier's words quoted.
fn event(e: &Event) -> String {
    if let Some(d) = &e.description {
        if is_chinese(d) {
            return d.clone();
        }
        if let Some(zh) = carrier_zh::sentence(d) {
            return zh;
        }
        let lead = e
            .code
            .as_deref()
            .and_then(carrier_zh::code)
            .map(|c| format!("{c}，"))
            .unwrap_or_default();
        return format!("{lead}承运商原文：“{d}”");
    }
    let code = e.code.as_deref().unwrap_or_default();
    let what = carrier_zh::code(code).map_or_else(|| quoted(code), str::to_owned);
    match e.location.as_deref() {
        Some(at) => match carrier_zh::place(at) {
            Some(place) => format!("{what}（{place}）"),
            None => format!("{what}（地点：“{at}”）"),
        },
        None => what,
    }
}

fn anomaly(a: &str) -> String {
    if is_chinese(a) {
        format!("物流异常：{a}。")
    } else if let Some(zh) = carrier_zh::sentence(a) {
        format!("物流异常：{zh}。")
    } else {
        format!("物流存在异常，承运商原文：“{a}”。")
    }
}

fn list(ids: &[String], last: &str) -> String {
    match ids {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., tail] => format!("{} {last} {tail}", init.join("、")),
    }
}

impl Voice for Zh {
    fn join(&self) -> &'static str {
        ""
    }

    fn greeting(&self, company: Company<'_>) -> String {
        format!("您好！我是{}的智能客服，可以帮您查询订单和物流、处理投诉与退款，或解答退换货政策。请问有什么可以帮您？", company.zh)
    }

    fn noted(&self) -> String {
        "好的，我已经记下了，以后会按照您的偏好处理。".into()
    }

    fn will_escalate(&self) -> String {
        "我会请人工客服尽快联系您。".into()
    }

    fn escalated(&self) -> String {
        "已为您转接人工客服，请稍候，同事马上就来。".into()
    }

    fn need_order_number(&self) -> String {
        "请提供您的订单号（例如 ORD-123），我马上为您查询。".into()
    }

    fn which_order(&self, ids: &[String]) -> String {
        format!("请问您指的是哪个订单：{}？", list(ids, "还是"))
    }

    fn unknown_orders(&self, ids: &[String]) -> String {
        match ids {
            [one] => format!("没有找到订单 {one}，请您核对一下订单号（例如 ORD-123）好吗？"),
            many => format!(
                "没有找到订单 {}，请您核对一下订单号好吗？",
                list(many, "和")
            ),
        }
    }

    fn unavailable(&self, system: System) -> String {
        match system {
            System::Orders => "暂时无法连接订单系统，请稍后再试。",
            System::Tracking => "快递公司的物流查询暂时没有响应，稍后可以再为您查询最新轨迹。",
            System::Tickets => "暂时无法创建工单，请稍后再试，或要求转人工。",
            System::HelpCenter => "帮助中心暂时无法搜索，可以请同事为您解答。",
            System::Escalation => "暂时无法转接人工客服，请稍后再试。",
        }
        .into()
    }

    fn denied(&self, reason: &str) -> String {
        let reason = if is_chinese(reason) {
            reason.to_owned()
        } else {
            format!("主管说明：“{reason}”")
        };
        format!("很抱歉，这一步未获主管批准（{reason}）。我们会通过其他方式跟进您的问题。")
    }

    fn order(&self, o: &Order, question: Question, with_latest: bool) -> String {
        let id = &o.id;
        let st = status(&o.status);
        let mut text = match (question, o.status.as_str()) {
            (Question::Arrived, "delivered") => match &o.delivered_at {
                Some(d) => format!("是的，您的订单 {id} 已于{}签收。", date(d)),
                None => format!("是的，您的订单 {id} 已签收。"),
            },
            (Question::Arrived, "refunded") => format!("您的订单 {id} 已退款。"),
            (Question::Arrived, _) => format!("还没有，您的订单 {id} 当前状态：{st}。"),
            (Question::Shipped, "processing") => {
                format!("还没有，您的订单 {id} 正在备货，尚未发货。")
            }
            (Question::Shipped, "shipped") => format!("是的，您的订单 {id} 已经发货。"),
            (Question::Shipped, "in_transit") => {
                format!("是的，您的订单 {id} 已经发货，正在运输中。")
            }
            (Question::Shipped, "delayed") => {
                format!("您的订单 {id} 已经发货，但运输出现延误。")
            }
            (Question::Shipped, "delivered") => {
                format!("是的，您的订单 {id} 已经发货并已签收。")
            }
            (Question::Shipped, "lost") => format!("您的订单 {id} 已发货，但在运输途中丢失。"),
            (Question::When, "delivered") => match &o.delivered_at {
                Some(d) => format!("您的订单 {id} 已于{}签收。", date(d)),
                None => format!("您的订单 {id} 已签收。"),
            },
            (Question::When, "processing" | "shipped" | "in_transit" | "delayed") => {
                match &o.promised_by {
                    Some(d) => format!("您的订单 {id} 当前状态：{st}，承诺送达日期为{}。", date(d)),
                    None => format!("您的订单 {id} 当前状态：{st}。"),
                }
            }
            _ => format!("您的订单 {id} 当前状态：{st}。"),
        };
        if with_latest {
            if let Some(e) = &o.latest {
                text.push_str(&format!("最新动态：{}。", event(e)));
            }
        }
        let repeated = with_latest
            && o.latest
                .as_ref()
                .and_then(|e| e.description.as_deref())
                .zip(o.anomaly.as_deref())
                .is_some_and(|(l, a)| l.contains(a));
        if let Some(a) = o.anomaly.as_deref().filter(|_| !repeated) {
            text.push_str(&anomaly(a));
        }
        text
    }

    fn tracking(&self, t: &Tracking) -> String {
        let carrier = match t.carrier.as_deref() {
            Some(c) => carrier_zh::carrier(c).map_or_else(|| c.to_owned(), str::to_owned),
            None => "快递公司".into(),
        };
        let number = t
            .tracking_number
            .as_deref()
            .map(|n| format!("（运单号 {n}）"))
            .unwrap_or_default();
        match &t.latest {
            Some(e) => format!("{carrier}{number}最新物流信息：{}。", event(e)),
            None => "暂时还没有物流记录。".into(),
        }
    }

    fn ticket_opened(&self, id: &str, category: &str) -> String {
        let kind = match category {
            "refund" => "退款",
            "complaint" => "投诉",
            "inquiry" => "咨询",
            _ => "",
        };
        format!("我已为您创建{kind}工单 {id}，相关团队会尽快跟进处理。")
    }

    fn ticket_exists(&self, ticket: &str, order: &str) -> String {
        format!("订单 {order} 的工单 {ticket} 已在处理中，我就不重复创建了；您的反馈已记录在本次对话中。")
    }

    fn ticket_follow_up(&self, ticket: &str) -> String {
        format!("您之前的工单 {ticket} 正由团队处理。我这里无法查看工单进度，如需了解，可以随时让人工客服为您查询。")
    }

    fn article(&self, a: &Article) -> String {
        if a.zh {
            format!("根据帮助中心的「{}」：{}", a.title, a.snippet)
        } else {
            format!(
                "帮助中心的英文文章{}写道：“{}”",
                quoted(&a.title),
                a.snippet
            )
        }
    }

    fn no_article(&self) -> String {
        "帮助中心里没有找到相关政策，我可以请同事为您解答。".into()
    }

    fn offer_complaint(&self, order: &str) -> String {
        format!("订单 {order} 给您带来不便，非常抱歉，需要我为您提交投诉，由团队跟进处理吗？")
    }

    fn anything_else(&self) -> String {
        "如有其他问题，随时告诉我。".into()
    }

    fn email_updates(&self) -> String {
        "我们会按您的偏好通过邮件通知进展。".into()
    }

    fn ticket_summary(&self, o: &Order) -> String {
        format!(
            "客户反映订单 {} {}，要求跟进处理。",
            o.id,
            status(&o.status)
        )
    }

    fn escalation_reason(&self) -> String {
        "客户要求转人工".into()
    }

    fn complaints_query(&self) -> String {
        "投诉处理".into()
    }
}
