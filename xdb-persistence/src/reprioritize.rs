//! `reprioritize`: the claim order an operator's change leaves an execution at, decided
//! purely from the order it has (the IO is in `operations::controls`).

use xdb_engine::validation::{check_fairness_weight, check_id, check_priority, ValidationError};
use xdb_engine::Fairness;
use xdb_protocol::fairness::DEFAULT_WEIGHT;
use xdb_protocol::{ClaimOrder, Reprioritization};

/// Why a change is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The request is wrong whatever the execution (a 400 naming the field).
    Invalid(String, String),
    /// The change does not apply to this execution as it stands (a 409).
    NotApplicable(String),
}

/// Checks what can be checked without the execution: a field to change, each in
/// bounds, no weight beside the removal of a key.
pub fn check(change: Option<&Reprioritization>) -> Result<&Reprioritization, Refusal> {
    let invalid = |field: &str, problem: String| Refusal::Invalid(field.into(), problem);
    let Some(change) = change else {
        return Err(invalid(
            "reprioritize",
            "name the new priority, fairnessKey or fairnessWeight".into(),
        ));
    };
    if change.priority.is_none()
        && change.fairness_key.is_none()
        && change.fairness_weight.is_none()
    {
        return Err(invalid(
            "reprioritize",
            "changes nothing: name priority, fairnessKey or fairnessWeight".into(),
        ));
    }
    let refused = |refused: ValidationError| invalid(&refused.field, refused.problem);
    if let Some(priority) = change.priority {
        check_priority("reprioritize.priority", priority).map_err(refused)?;
    }
    if let Some(weight) = change.fairness_weight {
        check_fairness_weight("reprioritize.fairnessWeight", weight).map_err(refused)?;
    }
    match change.fairness_key.as_deref() {
        Some("") if change.fairness_weight.is_some() => Err(invalid(
            "reprioritize.fairnessWeight",
            "weighs a fairness key, and fairnessKey \"\" removes it".into(),
        )),
        Some("") | None => Ok(change),
        Some(key) => {
            check_id("reprioritize.fairnessKey", key).map_err(refused)?;
            Ok(change)
        }
    }
}

/// The priority and fairness an execution at `priority` with `fairness` has after the
/// checked `change`: a field left out stays; a new key keeps the execution's weight.
pub(crate) fn apply(
    priority: u8,
    fairness: Option<&Fairness>,
    change: &Reprioritization,
) -> Result<(u8, Option<Fairness>), Refusal> {
    let key = match change.fairness_key.as_deref() {
        None => fairness.map(|f| f.key.clone()),
        Some("") => None,
        Some(key) => Some(key.to_string()),
    };
    let fairness = match key {
        Some(key) => Some(Fairness {
            key,
            weight: change
                .fairness_weight
                .or(fairness.map(|f| f.weight))
                .unwrap_or(DEFAULT_WEIGHT),
        }),
        None if change.fairness_weight.is_some() => {
            return Err(Refusal::NotApplicable(
                "the execution has no fairness key to weigh: name reprioritize.fairnessKey \
                 too"
                .into(),
            ))
        }
        None => None,
    };
    Ok((change.priority.unwrap_or(priority), fairness))
}

/// The claim order of `priority` and `fairness`, as the history tells it.
pub(crate) fn claim_order(priority: u8, fairness: Option<&Fairness>) -> ClaimOrder {
    ClaimOrder {
        priority,
        fairness_key: fairness.map(|f| f.key.clone()),
        fairness_weight: fairness.map(|f| f.weight),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(priority: Option<u8>, key: Option<&str>, weight: Option<u32>) -> Reprioritization {
        Reprioritization {
            priority,
            fairness_key: key.map(str::to_string),
            fairness_weight: weight,
        }
    }

    fn keyed(key: &str, weight: u32) -> Fairness {
        Fairness {
            key: key.into(),
            weight,
        }
    }

    fn field_of(refused: Refusal) -> String {
        match refused {
            Refusal::Invalid(field, _) => field,
            Refusal::NotApplicable(why) => panic!("not applicable: {why}"),
        }
    }

    #[test]
    fn a_change_names_something_in_bounds() {
        assert_eq!(field_of(check(None).unwrap_err()), "reprioritize");
        let nothing = change(None, None, None);
        assert_eq!(field_of(check(Some(&nothing)).unwrap_err()), "reprioritize");
        for (bad, field) in [
            (change(Some(0), None, None), "reprioritize.priority"),
            (change(Some(6), None, None), "reprioritize.priority"),
            (
                change(None, Some("t"), Some(0)),
                "reprioritize.fairnessWeight",
            ),
            (
                change(None, Some("t"), Some(1001)),
                "reprioritize.fairnessWeight",
            ),
            (
                change(None, Some(""), Some(2)),
                "reprioritize.fairnessWeight",
            ),
            (
                change(None, Some("a\u{7}b"), None),
                "reprioritize.fairnessKey",
            ),
            (
                change(None, Some(&"k".repeat(256)), None),
                "reprioritize.fairnessKey",
            ),
        ] {
            assert_eq!(field_of(check(Some(&bad)).unwrap_err()), field, "{bad:?}");
        }
        for good in [
            change(Some(1), None, None),
            change(None, Some(""), None),
            change(None, Some("tenant-ä"), Some(1000)),
            change(None, None, Some(3)),
        ] {
            assert!(check(Some(&good)).is_ok(), "{good:?}");
        }
    }

    #[test]
    fn what_is_left_out_stays() {
        let acme = keyed("acme", 3);
        assert_eq!(
            apply(3, Some(&acme), &change(Some(1), None, None)).unwrap(),
            (1, Some(acme.clone()))
        );
        assert_eq!(
            apply(3, Some(&acme), &change(None, None, Some(5))).unwrap(),
            (3, Some(keyed("acme", 5)))
        );
    }

    #[test]
    fn a_new_key_keeps_the_weight_and_an_empty_one_removes_both() {
        let acme = keyed("acme", 3);
        assert_eq!(
            apply(2, Some(&acme), &change(None, Some("globex"), None)).unwrap(),
            (2, Some(keyed("globex", 3)))
        );
        assert_eq!(
            apply(2, None, &change(None, Some("globex"), None)).unwrap(),
            (2, Some(keyed("globex", DEFAULT_WEIGHT)))
        );
        assert_eq!(
            apply(2, Some(&acme), &change(None, Some(""), None)).unwrap(),
            (2, None)
        );
    }

    #[test]
    fn a_weight_without_a_key_does_not_apply() {
        assert!(matches!(
            apply(3, None, &change(None, None, Some(2))),
            Err(Refusal::NotApplicable(_))
        ));
    }
}
