use xdb_protocol::{CronSpec, ScheduleChangeAction, ScheduleSpec, ScheduleStartTemplate};

use super::*;

on_both_databases!(
    store => store;
    a_schedule_reads_back_and_its_id_is_taken_once,
    a_replace_needs_the_version_it_read,
    firings_are_recorded_once_and_an_old_read_records_nothing,
    due_schedules_and_open_firings_follow_the_database_clock,
    lists_page_by_id_and_delete_takes_the_firings,
    one_instance_at_a_time_starts_a_schedules_firings,
    every_change_is_in_the_history_which_outlives_the_schedule,
);

/// An operator's `action`, as the API service notes it.
fn by(action: ScheduleChangeAction) -> ScheduleChangeNote<'static> {
    ScheduleChangeNote {
        action,
        changed_by: "ops",
        reason: None,
        detail: None,
    }
}

const CREATED: ScheduleChangeAction = ScheduleChangeAction::Created;
const UPDATED: ScheduleChangeAction = ScheduleChangeAction::Updated;

fn schedule(id: &str, process_type: &str) -> ScheduleInfo {
    ScheduleInfo {
        schedule_id: id.into(),
        spec: ScheduleSpec {
            cron: Some(CronSpec {
                expression: "0 3 * * *".into(),
                time_zone: Some("Europe/Paris".into()),
            }),
            interval: None,
        },
        start: ScheduleStartTemplate {
            process_type: process_type.into(),
            worker_url: "http://localhost:1".into(),
            start_state_id: Some("first".into()),
            start_state_input: None,
            start_state_config: None,
            process_start_config: None,
        },
        overlap_policy: ScheduleOverlapPolicy::BufferOne,
        catchup_window_seconds: 60,
        paused: false,
        note: Some("nightly report".into()),
        reason: None,
        next_fire_timestamp_ms: None,
        created_timestamp_ms: 0,
        updated_timestamp_ms: 0,
        declared_by: None,
    }
}

fn next_at(at: DateTime<Utc>) -> NextFiring {
    NextFiring {
        nominal_ms: Some(at.timestamp_millis()),
        fire_at: Some(at),
    }
}

fn firing(id: &str, nominal_ms: i64, at: DateTime<Utc>) -> NewFiring {
    NewFiring {
        nominal_ms,
        process_id: xdb_protocol::firing_process_id(id, nominal_ms),
        fired_by: ScheduleFiringTrigger::Spec,
        overlap_policy: ScheduleOverlapPolicy::Skip,
        fire_at: at,
    }
}

async fn a_schedule_reads_back_and_its_id_is_taken_once(store: impl ScheduleStore) {
    let at = store.database_clock().now() + chrono::TimeDelta::hours(1);
    let info = schedule("nightly", "report");
    assert!(store
        .create_schedule(&info, next_at(at), &by(CREATED))
        .await
        .unwrap());
    assert!(!store
        .create_schedule(&info, next_at(at), &by(CREATED))
        .await
        .unwrap());
    let stored = store.get_schedule("nightly").await.unwrap().unwrap();
    assert_eq!(stored.version, 1);
    assert_eq!(stored.info.spec, info.spec);
    assert_eq!(stored.info.start, info.start);
    assert_eq!(stored.info.overlap_policy, ScheduleOverlapPolicy::BufferOne);
    assert_eq!(stored.info.note.as_deref(), Some("nightly report"));
    assert!(!stored.info.paused);
    assert_eq!(
        stored.info.next_fire_timestamp_ms,
        Some(at.timestamp_millis())
    );
    assert_eq!(
        stored.next_fire_at.map(|t| t.timestamp_millis()),
        Some(at.timestamp_millis())
    );
    assert!(stored.info.created_timestamp_ms > 0);
    assert!(store.get_schedule("other").await.unwrap().is_none());
}

async fn a_replace_needs_the_version_it_read(store: impl ScheduleStore) {
    let info = schedule("s", "report");
    store
        .create_schedule(
            &info,
            NextFiring {
                nominal_ms: None,
                fire_at: None,
            },
            &by(CREATED),
        )
        .await
        .unwrap();
    let mut paused = info.clone();
    paused.paused = true;
    paused.reason = Some("maintenance".into());
    let none = NextFiring {
        nominal_ms: None,
        fire_at: None,
    };
    assert!(store
        .replace_schedule(&paused, none, 1, &by(UPDATED))
        .await
        .unwrap());
    assert!(
        !store
            .replace_schedule(&info, none, 1, &by(UPDATED))
            .await
            .unwrap(),
        "stale"
    );
    let stored = store.get_schedule("s").await.unwrap().unwrap();
    assert!(stored.info.paused);
    assert_eq!(stored.version, 2);
    assert_eq!(stored.info.reason.as_deref(), Some("maintenance"));
    assert_eq!(stored.info.next_fire_timestamp_ms, None);
}

async fn firings_are_recorded_once_and_an_old_read_records_nothing(store: impl ScheduleStore) {
    let now = store.database_clock().now();
    store
        .create_schedule(&schedule("s", "report"), next_at(now), &by(CREATED))
        .await
        .unwrap();
    let first = firing("s", 1_000, now);
    let second = firing("s", 2_000, now);
    let advance = Some((1, next_at(now + chrono::TimeDelta::minutes(1))));
    let recorded = store
        .record_firings("s", &[first.clone(), second.clone()], advance, None)
        .await
        .unwrap();
    assert_eq!(recorded, Some(2));
    // Another instance that read version 1 records nothing.
    assert_eq!(
        store
            .record_firings("s", std::slice::from_ref(&first), advance, None)
            .await
            .unwrap(),
        None
    );
    // A manual firing of a nominal time already recorded is not recorded again.
    assert_eq!(
        store
            .record_firings("s", &[second], None, None)
            .await
            .unwrap(),
        Some(0)
    );
    assert_eq!(
        store
            .record_firings("gone", &[first], None, None)
            .await
            .unwrap(),
        None
    );
    let stored = store.get_schedule("s").await.unwrap().unwrap();
    assert_eq!(stored.version, 2);
    let recent = store.recent_firings("s", 10).await.unwrap();
    let nominal: Vec<i64> = recent.iter().map(|f| f.nominal_timestamp_ms).collect();
    assert_eq!(nominal, [2_000, 1_000], "newest first");
    assert!(recent
        .iter()
        .all(|f| f.outcome == ScheduleFiringOutcome::Pending));
    assert_eq!(recent[0].process_id, "s-1970-01-01T00:00:02Z");

    let execution = Uuid::now_v7();
    let started = ScheduleFiringOutcome::Started;
    assert!(store
        .resolve_firing("s", 1_000, started, Some(execution), None)
        .await
        .unwrap());
    assert!(
        !store
            .resolve_firing("s", 1_000, started, None, None)
            .await
            .unwrap(),
        "closed"
    );
    let previous = store.previous_started("s", 2_000).await.unwrap().unwrap();
    assert_eq!(previous.process_execution_id, Some(execution.to_string()));
    assert!(previous.resolved_timestamp_ms.is_some());
    assert!(store.previous_started("s", 1_000).await.unwrap().is_none());
}

async fn due_schedules_and_open_firings_follow_the_database_clock(store: impl ScheduleStore) {
    let now = store.database_clock().now();
    let past = now - chrono::TimeDelta::seconds(5);
    let future = now + chrono::TimeDelta::hours(1);
    store
        .create_schedule(&schedule("due", "t"), next_at(past), &by(CREATED))
        .await
        .unwrap();
    store
        .create_schedule(&schedule("later", "t"), next_at(future), &by(CREATED))
        .await
        .unwrap();
    let mut paused = schedule("paused", "t");
    paused.paused = true;
    store
        .create_schedule(&paused, next_at(past), &by(CREATED))
        .await
        .unwrap();
    let due = store.due_schedules(10).await.unwrap();
    let ids: Vec<&str> = due.iter().map(|s| s.info.schedule_id.as_str()).collect();
    assert_eq!(ids, ["due"]);

    store
        .record_firings(
            "due",
            &[firing("due", 2, past), firing("due", 1, past)],
            None,
            None,
        )
        .await
        .unwrap();
    store
        .record_firings("later", &[firing("later", 1, future)], None, None)
        .await
        .unwrap();
    let open = store.open_firings(10).await.unwrap();
    let keys: Vec<(&str, i64)> = open
        .iter()
        .map(|f| (f.schedule_id.as_str(), f.firing.nominal_timestamp_ms))
        .collect();
    assert_eq!(keys, [("due", 1), ("due", 2)], "oldest first, none early");
    let buffered = ScheduleFiringOutcome::Buffered;
    assert!(store
        .resolve_firing("due", 1, buffered, None, None)
        .await
        .unwrap());
    assert_eq!(
        store.open_firings(10).await.unwrap().len(),
        2,
        "buffered stays open"
    );
    let skipped = ScheduleFiringOutcome::Skipped;
    assert!(store
        .resolve_firing("due", 1, skipped, None, Some("overlap"))
        .await
        .unwrap());
    assert_eq!(store.open_firings(10).await.unwrap().len(), 1);
}

async fn lists_page_by_id_and_delete_takes_the_firings(store: impl ScheduleStore) {
    let none = NextFiring {
        nominal_ms: None,
        fire_at: None,
    };
    for (id, process_type) in [("c", "x"), ("a", "x"), ("b", "y"), ("d", "x")] {
        store
            .create_schedule(&schedule(id, process_type), none, &by(CREATED))
            .await
            .unwrap();
    }
    let page = |token: Option<&str>, process_type: Option<&str>| ScheduleListRequest {
        process_type: process_type.map(str::to_string),
        page_size: Some(2),
        next_page_token: token.map(str::to_string),
    };
    let first = store.list_schedules(&page(None, None)).await.unwrap();
    let ids = |r: &ScheduleListResponse| {
        r.schedules
            .iter()
            .map(|s| s.schedule_id.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(ids(&first), ["a", "b"]);
    let token = first.next_page_token.clone().unwrap();
    let second = store
        .list_schedules(&page(Some(&token), None))
        .await
        .unwrap();
    assert_eq!(ids(&second), ["c", "d"]);
    assert_eq!(second.next_page_token, None);
    let of_x = store.list_schedules(&page(None, Some("x"))).await.unwrap();
    assert_eq!(ids(&of_x), ["a", "c"]);

    let now = store.database_clock().now();
    store
        .record_firings("a", &[firing("a", 1, now)], None, None)
        .await
        .unwrap();
    assert!(store
        .delete_schedule("a", &by(ScheduleChangeAction::Deleted))
        .await
        .unwrap());
    assert!(!store
        .delete_schedule("a", &by(ScheduleChangeAction::Deleted))
        .await
        .unwrap());
    assert!(store.recent_firings("a", 10).await.unwrap().is_empty());
    assert!(store.get_schedule("a").await.unwrap().is_none());
}

async fn one_instance_at_a_time_starts_a_schedules_firings(store: impl ScheduleStore) {
    let none = NextFiring {
        nominal_ms: None,
        fire_at: None,
    };
    store
        .create_schedule(&schedule("s", "t"), none, &by(CREATED))
        .await
        .unwrap();
    let lease = std::time::Duration::from_secs(30);
    assert!(store.lease_schedule("s", "a", lease).await.unwrap());
    assert!(
        !store.lease_schedule("s", "b", lease).await.unwrap(),
        "held by a"
    );
    assert!(
        store.lease_schedule("s", "a", lease).await.unwrap(),
        "renewed"
    );
    store.release_schedule("s", "b").await.unwrap();
    assert!(
        !store.lease_schedule("s", "b", lease).await.unwrap(),
        "b held nothing"
    );
    store.release_schedule("s", "a").await.unwrap();
    assert!(store.lease_schedule("s", "b", lease).await.unwrap());
    // A lease that ran out (its holder died) is taken over.
    let short = std::time::Duration::from_millis(1);
    store.release_schedule("s", "b").await.unwrap();
    assert!(store.lease_schedule("s", "dead", short).await.unwrap());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !store.lease_schedule("s", "c", lease).await.unwrap() {
        assert!(
            std::time::Instant::now() < deadline,
            "the run-out lease is never taken over"
        );
        tokio::task::yield_now().await;
    }
    assert!(!store.lease_schedule("missing", "a", lease).await.unwrap());
}

async fn every_change_is_in_the_history_which_outlives_the_schedule(store: impl ScheduleStore) {
    let none = NextFiring {
        nominal_ms: None,
        fire_at: None,
    };
    let info = schedule("s", "t");
    store
        .create_schedule(&info, none, &by(CREATED))
        .await
        .unwrap();
    let mut paused = info.clone();
    paused.paused = true;
    let pause = ScheduleChangeNote {
        reason: Some("maintenance"),
        ..by(ScheduleChangeAction::Paused)
    };
    assert!(store
        .replace_schedule(&paused, none, 1, &pause)
        .await
        .unwrap());
    // A replace that lost its race records nothing.
    assert!(!store
        .replace_schedule(&info, none, 1, &by(UPDATED))
        .await
        .unwrap());
    let now = store.database_clock().now();
    let trigger = ScheduleChangeNote {
        detail: Some("process id s-1"),
        ..by(ScheduleChangeAction::Triggered)
    };
    store
        .record_firings("s", &[firing("s", 1, now)], None, Some(&trigger))
        .await
        .unwrap();
    // The firer's own firings are not an operator's change.
    store
        .record_firings("s", &[firing("s", 2, now)], None, None)
        .await
        .unwrap();
    let delete = by(ScheduleChangeAction::Deleted);
    assert!(store.delete_schedule("s", &delete).await.unwrap());
    assert!(!store.delete_schedule("s", &delete).await.unwrap());
    store
        .create_schedule(&schedule("other", "t"), none, &by(CREATED))
        .await
        .unwrap();

    let of_s = |page_size, token: Option<String>| ScheduleHistoryRequest {
        schedule_id: Some("s".into()),
        page_size: Some(page_size),
        next_page_token: token,
    };
    let all = store.schedule_history(&of_s(10, None)).await.unwrap();
    let actions: Vec<_> = all.changes.iter().map(|c| c.action).collect();
    assert_eq!(
        actions,
        [
            ScheduleChangeAction::Deleted,
            ScheduleChangeAction::Triggered,
            ScheduleChangeAction::Paused,
            CREATED
        ]
    );
    assert_eq!(all.next_page_token, None);
    let [deleted, triggered, paused_change, created] = &all.changes[..] else {
        unreachable!()
    };
    assert!(created.before.is_none());
    let created_after = created.after.as_ref().unwrap();
    assert_eq!(created_after.spec, info.spec);
    assert!(created_after.created_timestamp_ms > 0);
    assert!(!paused_change.before.as_ref().unwrap().paused);
    assert!(paused_change.after.as_ref().unwrap().paused);
    assert_eq!(paused_change.reason.as_deref(), Some("maintenance"));
    assert_eq!(paused_change.changed_by, "ops");
    assert_eq!(triggered.detail.as_deref(), Some("process id s-1"));
    assert!(triggered.before.is_none() && triggered.after.is_none());
    assert!(deleted.before.as_ref().unwrap().paused);
    assert!(deleted.after.is_none());
    assert!(deleted.changed_timestamp_ms >= created.changed_timestamp_ms);

    let first = store.schedule_history(&of_s(3, None)).await.unwrap();
    assert_eq!(first.changes.len(), 3);
    let second = store
        .schedule_history(&of_s(3, first.next_page_token.clone()))
        .await
        .unwrap();
    assert_eq!(second.changes, std::slice::from_ref(created));
    assert_eq!(second.next_page_token, None);

    let everyone = store
        .schedule_history(&ScheduleHistoryRequest::default())
        .await
        .unwrap();
    assert_eq!(everyone.changes.len(), 5);
    assert_eq!(everyone.changes[0].schedule_id, "other");
}
