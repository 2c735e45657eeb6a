//! The audit line of a decision: its status, tool and rule, each argument
//! the supervisor changed (proposed → run) and the reason.

use aics_types::Approval;
use serde_json::Value;

/// The audit line of a decision: how, the tool and the rule, what the
/// supervisor changed in the arguments (each changed key, proposed → run),
/// and the reason.
pub(crate) fn decision_detail(a: &Approval) -> String {
    let mut out = format!("{}: {} (rule {})", a.status.as_str(), a.tool, rule_name(a));
    if let Some(edited) = a.approved_args.as_ref().filter(|e| **e != a.proposed_args) {
        out.push_str("; edited ");
        out.push_str(&args_diff(&a.proposed_args, edited));
    }
    if let Some(reason) = a.decision_reason.as_deref().filter(|r| !r.is_empty()) {
        out.push_str("; reason: ");
        out.push_str(reason);
    }
    out
}

fn rule_name(a: &Approval) -> &str {
    if a.rule.is_empty() {
        "-"
    } else {
        &a.rule
    }
}

/// `key: old → new` for each key that differs (`∅` when absent).
pub(crate) fn args_diff(before: &Value, after: &Value) -> String {
    let (Some(b), Some(a)) = (before.as_object(), after.as_object()) else {
        return format!("{before} → {after}");
    };
    let mut keys: Vec<&String> = b.keys().chain(a.keys()).collect();
    keys.sort();
    keys.dedup();
    let show = |v: Option<&Value>| v.map_or_else(|| "∅".to_owned(), Value::to_string);
    keys.into_iter()
        .filter(|k| b.get(*k) != a.get(*k))
        .map(|k| format!("{k}: {} → {}", show(b.get(k)), show(a.get(k))))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::args_diff;

    #[test]
    fn the_diff_names_each_changed_key() {
        let d = args_diff(
            &json!({"category": "inquiry", "summary": "s", "gone": 1}),
            &json!({"category": "complaint", "summary": "s", "new": true}),
        );
        assert_eq!(
            d,
            r#"category: "inquiry" → "complaint", gone: 1 → ∅, new: ∅ → true"#
        );
    }
}
