//! meta/v1's rules for a list of `Condition`s (kube's `ValidateConditions`), as kube-apiserver
//! applies them to the conditions its built-in kinds carry in their status.
//!
//! Invariants: a repeated type is named at the later condition's `type`, before that
//! condition's own causes; each condition needs a type (a qualified name), a status of `True`,
//! `False` or `Unknown`, a non-negative observed generation, a transition time and a reason in
//! kube's format of at most 1,024 bytes; its message is at most 32 KiB.

use serde_json::Value;

use crate::policy_validation::{duplicate, invalid, required, unsupported};
use crate::structural::Cause;

/// The causes of the conditions `conditions` at `at`.
pub(crate) fn validate(conditions: &[Value], at: &str, causes: &mut Vec<Cause>) {
    let text = |c: &Value, k: &str| c.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let mut seen: Vec<String> = Vec::new();
    for (i, c) in conditions.iter().enumerate() {
        let at = format!("{at}[{i}]");
        let kind = text(c, "type");
        if seen.contains(&kind) {
            causes.push(duplicate(format!("{at}.type"), &kind));
        } else {
            seen.push(kind.clone());
        }
        for fault in crate::cel_format::qualified_name(&kind) {
            causes.push(invalid(format!("{at}.type"), &kind, &fault));
        }
        let status = text(c, "status");
        if !matches!(status.as_str(), "True" | "False" | "Unknown") {
            causes.push(unsupported(format!("{at}.status"), &status, &["False", "True", "Unknown"]));
        }
        let generation = c.get("observedGeneration").and_then(Value::as_i64).unwrap_or(0);
        if generation < 0 {
            causes.push(crate::pod_validation::number(
                format!("{at}.observedGeneration"),
                generation,
                "must be greater than or equal to zero",
            ));
        }
        if text(c, "lastTransitionTime").is_empty() {
            causes.push(required(format!("{at}.lastTransitionTime"), ""));
        }
        let reason = text(c, "reason");
        if reason.is_empty() {
            causes.push(required(format!("{at}.reason"), ""));
        } else {
            for fault in crate::cel_format::condition_reason(&reason) {
                causes.push(invalid(format!("{at}.reason"), &reason, &fault));
            }
            if reason.len() > 1024 {
                causes.push(crate::csi_validation::too_long(&format!("{at}.reason"), 1024));
            }
        }
        if text(c, "message").len() > 32 * 1024 {
            causes.push(crate::csi_validation::too_long(&format!("{at}.message"), 32 * 1024));
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn conditions_are_judged_as_meta_v1_judges_them() {
        let conditions = [
            json!({"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z", "reason": "Up"}),
            json!({"type": "Ready", "status": "Yes", "reason": "1bad", "observedGeneration": -1}),
        ];
        let mut causes = Vec::new();
        validate(&conditions, "status.conditions", &mut causes);
        let got: Vec<String> = causes.iter().map(|c| format!("{}: {}", c.field, c.message)).collect();
        assert_eq!(got[0], "status.conditions[1].type: Duplicate value: \"Ready\"");
        assert_eq!(
            got[1],
            "status.conditions[1].status: Unsupported value: \"Yes\": supported values: \"False\", \"True\", \"Unknown\""
        );
        assert_eq!(
            got[2],
            "status.conditions[1].observedGeneration: Invalid value: -1: must be greater than or equal to zero"
        );
        assert_eq!(got[3], "status.conditions[1].lastTransitionTime: Required value");
        assert!(
            got[4].starts_with("status.conditions[1].reason: Invalid value: \"1bad\": a condition reason must start"),
            "{got:?}"
        );
        assert_eq!(got.len(), 5);
    }
}
