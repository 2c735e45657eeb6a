//! What changed in a turn's state between two checkpoints, field by field:
//! the step history's diff. Computed on the JSON of the states, so it
//! works on any checkpointed state (old checkpoints too) and in the browser.
//!
//! A list that only grew at its end (`messages`, `toolCallHistory`, the
//! LLM call records) is reported as the items appended; anything else that
//! differs as its value before and after.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// How one top-level field of the state changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    /// A list grew at its end: `after` holds the new items.
    Appended,
    /// The value differs: `before` and `after`.
    Changed,
    /// The field is new: `after`.
    Added,
    /// The field is gone: `before`.
    Removed,
}

/// One changed field.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FieldChange {
    pub field: String,
    pub kind: ChangeKind,
    #[serde(default)]
    pub before: Option<Value>,
    #[serde(default)]
    pub after: Option<Value>,
}

/// What changed from `before` to `after` (two checkpointed states), in
/// the order of `after`'s fields, then the removed ones. `before` = `None`
/// (the first checkpoint) reports every field as added. Non-object states
/// are compared as one field named `state`.
pub fn state_diff(before: Option<&Value>, after: &Value) -> Vec<FieldChange> {
    let empty = serde_json::Map::new();
    let (Some(after_map), before_map) = (
        after.as_object(),
        before.map(|b| b.as_object()).unwrap_or(Some(&empty)),
    ) else {
        return whole(before, after);
    };
    let Some(before_map) = before_map else {
        return whole(before, after);
    };
    let mut changes = Vec::new();
    for (field, new) in after_map {
        match before_map.get(field) {
            None => changes.push(FieldChange {
                field: field.clone(),
                kind: ChangeKind::Added,
                before: None,
                after: Some(new.clone()),
            }),
            Some(old) if old == new => {}
            Some(old) => changes.push(compare(field, old, new)),
        }
    }
    for (field, old) in before_map {
        if !after_map.contains_key(field) {
            changes.push(FieldChange {
                field: field.clone(),
                kind: ChangeKind::Removed,
                before: Some(old.clone()),
                after: None,
            });
        }
    }
    changes
}

fn compare(field: &str, old: &Value, new: &Value) -> FieldChange {
    if let (Value::Array(old_items), Value::Array(new_items)) = (old, new) {
        if new_items.len() > old_items.len() && new_items[..old_items.len()] == old_items[..] {
            return FieldChange {
                field: field.to_owned(),
                kind: ChangeKind::Appended,
                before: None,
                after: Some(Value::Array(new_items[old_items.len()..].to_vec())),
            };
        }
    }
    FieldChange {
        field: field.to_owned(),
        kind: ChangeKind::Changed,
        before: Some(old.clone()),
        after: Some(new.clone()),
    }
}

fn whole(before: Option<&Value>, after: &Value) -> Vec<FieldChange> {
    match before {
        Some(old) if old == after => Vec::new(),
        Some(old) => vec![compare("state", old, after)],
        None => vec![FieldChange {
            field: "state".into(),
            kind: ChangeKind::Added,
            before: None,
            after: Some(after.clone()),
        }],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn appended_messages_changed_fields_added_and_removed_ones() {
        let before = json!({
            "messages": [{"role": "user", "content": "hi"}],
            "current_step": 0,
            "stop": false,
            "intent": "order",
            "gone": 1,
        });
        let after = json!({
            "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}],
            "current_step": 1,
            "stop": false,
            "intent": "order",
            "final_reply": "hello",
        });
        let diff = state_diff(Some(&before), &after);
        let by_field = |f: &str| diff.iter().find(|c| c.field == f).cloned();
        let messages = by_field("messages").expect("messages changed");
        assert_eq!(messages.kind, ChangeKind::Appended);
        assert_eq!(
            messages.after,
            Some(json!([{"role": "assistant", "content": "hello"}]))
        );
        let step = by_field("current_step").expect("step changed");
        assert_eq!(step.kind, ChangeKind::Changed);
        assert_eq!((step.before, step.after), (Some(json!(0)), Some(json!(1))));
        assert_eq!(
            by_field("final_reply").map(|c| c.kind),
            Some(ChangeKind::Added)
        );
        assert_eq!(by_field("gone").map(|c| c.kind), Some(ChangeKind::Removed));
        assert!(by_field("stop").is_none() && by_field("intent").is_none());
        assert_eq!(diff.len(), 4);
    }

    #[test]
    fn a_list_edited_in_the_middle_is_a_change_and_the_first_state_is_all_new() {
        let before = json!({"tool_records": [{"id": "a", "status": "pending"}]});
        let after = json!({"tool_records": [{"id": "a", "status": "ok"}, {"id": "b"}]});
        let diff = state_diff(Some(&before), &after);
        assert_eq!(diff[0].kind, ChangeKind::Changed);
        let first = state_diff(None, &after);
        assert_eq!(first.len(), 1);
        assert_eq!(first[0].kind, ChangeKind::Added);
        assert!(state_diff(Some(&after), &after).is_empty());
        assert_eq!(state_diff(Some(&json!(1)), &json!(2))[0].field, "state");
    }
}
