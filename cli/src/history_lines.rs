//! History events as people read them: the state an event concerns, and one line saying
//! what happened, from the event's typed details (`xdb_protocol::history`).

use serde_json::Value;
use xdb_protocol::fairness;

/// The state execution an event concerns, when it has one.
pub fn state_of(details: &Value) -> Option<String> {
    details["stateExecutionId"].as_str().map(str::to_owned)
}

/// One line saying what the event says.
pub fn summary(event_type: &str, details: &Value) -> String {
    let text = |key: &str| details[key].as_str().unwrap_or_default().to_owned();
    let number = |key: &str| details[key].as_u64().unwrap_or_default();
    let who = || {
        let identity = details["identity"].as_str().unwrap_or("an operator");
        match details["reason"].as_str() {
            Some(reason) => format!("by {identity}: {reason}"),
            None => format!("by {identity}"),
        }
    };
    match event_type {
        "PROCESS_STARTED" => {
            let mut line = format!("type {}", text("processType"));
            match details["startStateId"].as_str() {
                Some(state) => line.push_str(&format!(", starts at {state}")),
                None => line.push_str(", no state running"),
            }
            if let Some(previous) = details["resetFrom"].as_str() {
                line.push_str(&format!(", reset from {previous}"));
            }
            if let Some(previous) = details["terminatedPrevious"].as_str() {
                line.push_str(&format!(", terminated {previous}"));
            }
            line
        }
        "PROCESS_CLOSED" => match details["failure"].as_str() {
            Some(failure) => format!("{}: {failure}", text("status")),
            None => text("status"),
        },
        "WAIT_UNTIL_COMPLETED" => commands(&details["commandRequest"]),
        "EXECUTE_COMPLETED" => decision(&details["decision"]),
        "STATE_API_FAILED" => {
            let api = text("api");
            let error = text("error");
            match details["nonRetryableErrorType"].as_str() {
                Some(kind) => format!(
                    "{api} attempt {}: {error} (not retryable: {kind})",
                    number("attempt")
                ),
                None => format!("{api} attempt {}: {error}", number("attempt")),
            }
        }
        "TIMER_FIRED" => format!("timer {}", number("timerIndex")),
        "LOCAL_QUEUE_MESSAGES_PUBLISHED" => {
            let by = match (
                details["rpcName"].as_str(),
                details["stateExecutionId"].as_str(),
            ) {
                (Some(rpc), _) => format!(" by rpc {rpc}"),
                (None, Some(_)) => " by the state".to_owned(),
                (None, None) => " by a client".to_owned(),
            };
            let duplicates = number("duplicates");
            let dropped = if duplicates > 0 {
                format!(" ({duplicates} duplicates dropped)")
            } else {
                String::new()
            };
            format!("{} message(s){by}{dropped}", number("messages"))
        }
        "LOCAL_QUEUE_MESSAGES_CONSUMED" => {
            let count = details["messages"].as_array().map_or(0, Vec::len);
            match details["queueName"].as_str() {
                Some(queue) => format!("{count} message(s) of {queue}"),
                None => format!("{count} message(s)"),
            }
        }
        "RPC_COMPLETED" => {
            let mut line = format!("rpc {}", text("rpcName"));
            let states = details["appendedStates"].as_array().map_or(0, Vec::len);
            if states > 0 {
                line.push_str(&format!(", started {states} state(s)"));
            }
            if number("published") > 0 {
                line.push_str(&format!(", published {}", number("published")));
            }
            line
        }
        "RETRY_REQUESTED" | "GIVE_UP_REQUESTED" | "PAUSED" | "RESUMED" => {
            let states = details["stateExecutionIds"]
                .as_array()
                .map(|ids| ids.iter().filter_map(Value::as_str).collect::<Vec<_>>())
                .unwrap_or_default();
            if states.is_empty() {
                who()
            } else {
                format!("{} {}", states.join(", "), who())
            }
        }
        "TASK_PARKED" => format!(
            "{} parked ({}): {}",
            text("taskType"),
            details["reason"].as_str().unwrap_or("REFUSED"),
            text("error")
        ),
        "PROCESS_RESET" => format!("to {} {}", text("stateExecutionId"), who()),
        "REPRIORITIZED" => format!(
            "{} {}",
            reordering(&details["before"], &details["after"]),
            who()
        ),
        _ => compact(details),
    }
}

/// How a claim order (`ClaimOrder`) changed: `priority 5 → 1, fairness key none → acme
/// (weight 2)`; only what changed.
fn reordering(before: &Value, after: &Value) -> String {
    let priority = |order: &Value| order["priority"].as_u64().unwrap_or_default();
    let key = |order: &Value| {
        order["fairnessKey"].as_str().map(|key| {
            let weight = order["fairnessWeight"]
                .as_u64()
                .unwrap_or(u64::from(fairness::DEFAULT_WEIGHT));
            (key.to_owned(), weight)
        })
    };
    let keyed = |key: Option<(String, u64)>| match key {
        Some((key, weight)) => format!("{key} (weight {weight})"),
        None => "none".to_owned(),
    };
    let mut changes = Vec::new();
    if priority(before) != priority(after) {
        changes.push(format!(
            "priority {} → {}",
            priority(before),
            priority(after)
        ));
    }
    match (key(before), key(after)) {
        (was, now) if was == now => {}
        (Some((was, from)), Some((now, to))) if was == now => {
            changes.push(format!("fairness key {now} (weight {from} → {to})"));
        }
        (was, now) => changes.push(format!("fairness key {} → {}", keyed(was), keyed(now))),
    }
    if changes.is_empty() {
        // A change to the order it had: say which, so the line is not blank.
        let mut same = format!("unchanged: priority {}", priority(after));
        if let Some(key) = key(after) {
            same.push_str(&format!(", fairness key {}", keyed(Some(key))));
        }
        return same;
    }
    changes.join(", ")
}

/// What a waitUntil waits for: its timers and queues.
fn commands(request: &Value) -> String {
    let timers = request["timerCommands"].as_array().map_or(0, Vec::len);
    let queues: Vec<&str> = request["localQueueCommands"]
        .as_array()
        .map(|q| q.iter().filter_map(|c| c["queueName"].as_str()).collect())
        .unwrap_or_default();
    let mut waits = Vec::new();
    if timers > 0 {
        waits.push(format!("{timers} timer(s)"));
    }
    if !queues.is_empty() {
        waits.push(format!("queue {}", queues.join(", ")));
    }
    if waits.is_empty() {
        return "waits for nothing".to_owned();
    }
    let how = match request["waitingType"].as_str() {
        Some("ANY_OF_COMPLETION") => "any of",
        Some("ALL_OF_COMPLETION") => "all of",
        _ => "",
    };
    format!("waits for {how} {}", waits.join(" and ")).replace("  ", " ")
}

/// An execute's decision: the next states, or how the thread ends.
fn decision(decision: &Value) -> String {
    let next: Vec<&str> = decision["nextStates"]
        .as_array()
        .map(|s| s.iter().filter_map(|m| m["stateId"].as_str()).collect())
        .unwrap_or_default();
    if !next.is_empty() {
        return format!("→ {}", next.join(", "));
    }
    match decision["threadCloseDecision"]["closeType"].as_str() {
        Some(close) => close.to_ascii_lowercase().replace('_', " "),
        None => "dead end".to_owned(),
    }
}

fn compact(details: &Value) -> String {
    serde_json::to_string(details).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn events_read_as_one_line() {
        let cases = [
            (
                "PROCESS_STARTED",
                json!({"processType": "Signup", "startStateId": "Submit"}),
                "type Signup, starts at Submit",
            ),
            (
                "PROCESS_CLOSED",
                json!({"status": "FAILED", "failure": "boom"}),
                "FAILED: boom",
            ),
            (
                "WAIT_UNTIL_COMPLETED",
                json!({"stateExecutionId": "A-1", "commandRequest": {"waitingType": "ANY_OF_COMPLETION",
                    "timerCommands": [{"durationSeconds": 5}], "localQueueCommands": [{"queueName": "go"}]}}),
                "waits for any of 1 timer(s) and queue go",
            ),
            (
                "EXECUTE_COMPLETED",
                json!({"stateExecutionId": "A-1", "decision": {"nextStates": [{"stateId": "B"}, {"stateId": "C"}]}}),
                "→ B, C",
            ),
            (
                "EXECUTE_COMPLETED",
                json!({"decision": {"threadCloseDecision": {"closeType": "GRACEFUL_COMPLETE_PROCESS"}}}),
                "graceful complete process",
            ),
            (
                "STATE_API_FAILED",
                json!({"api": "execute", "attempt": 3, "error": "HTTP 500"}),
                "execute attempt 3: HTTP 500",
            ),
            (
                "PAUSED",
                json!({"identity": "ops", "reason": "look", "stateExecutionIds": []}),
                "by ops: look",
            ),
            (
                "LOCAL_QUEUE_MESSAGES_PUBLISHED",
                json!({"messages": 2, "duplicates": 1}),
                "2 message(s) by a client (1 duplicates dropped)",
            ),
        ];
        for (event_type, details, expected) in cases {
            assert_eq!(summary(event_type, &details), expected, "{event_type}");
        }
        assert_eq!(
            state_of(&json!({"stateExecutionId": "A-1"})).as_deref(),
            Some("A-1")
        );
        assert_eq!(state_of(&json!({})), None);
        assert_eq!(summary("SOMETHING_NEW", &json!({"a": 1})), "{\"a\":1}");
    }

    #[test]
    fn a_reprioritization_reads_as_what_changed() {
        let event = |before: Value, after: Value| {
            json!({"before": before, "after": after, "identity": "ops", "reason": "vip",
                "stateExecutionIds": ["A-1"]})
        };
        let cases = [
            (
                event(
                    json!({"priority": 5}),
                    json!({"priority": 1, "fairnessKey": "acme", "fairnessWeight": 2}),
                ),
                "priority 5 → 1, fairness key none → acme (weight 2) by ops: vip",
            ),
            (
                event(
                    json!({"priority": 3, "fairnessKey": "acme", "fairnessWeight": 2}),
                    json!({"priority": 3}),
                ),
                "fairness key acme (weight 2) → none by ops: vip",
            ),
            (
                event(
                    json!({"priority": 3, "fairnessKey": "acme", "fairnessWeight": 2}),
                    json!({"priority": 3, "fairnessKey": "acme", "fairnessWeight": 9}),
                ),
                "fairness key acme (weight 2 → 9) by ops: vip",
            ),
            (
                // A key without a weight has the default one.
                event(
                    json!({"priority": 2, "fairnessKey": "a"}),
                    json!({"priority": 2, "fairnessKey": "b", "fairnessWeight": 1}),
                ),
                "fairness key a (weight 1) → b (weight 1) by ops: vip",
            ),
            (
                event(
                    json!({"priority": 4, "fairnessKey": "a", "fairnessWeight": 1}),
                    json!({"priority": 4, "fairnessKey": "a"}),
                ),
                "unchanged: priority 4, fairness key a (weight 1) by ops: vip",
            ),
        ];
        for (details, expected) in cases {
            assert_eq!(summary("REPRIORITIZED", &details), expected);
        }
        assert_eq!(state_of(&event(json!({}), json!({}))), None);
    }
}
