use xdb_protocol::{CronSpec, ScheduleSpec, ScheduleStartTemplate};

use super::*;

on_both_databases!(
    store => store;
    a_schedule_reads_back_and_its_id_is_taken_once,
    a_replace_needs_the_version_it_read,
    firings_are_recorded_once_and_an_old_read_records_nothing,
    due_schedules_and_open_firings_follow_the_database_clock,
    lists_page_by_id_and_delete_takes_the_firings,
    one_instance_at_a_time_starts_a_schedules_firings,
);

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
    assert!(store.create_schedule(&info, next_at(at)).await.unwrap());
    assert!(!store.create_schedule(&info, next_at(at)).await.unwrap());
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
    assert!(store.replace_schedule(&paused, none, 1).await.unwrap());
    assert!(
        !store.replace_schedule(&info, none, 1).await.unwrap(),
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
        .create_schedule(&schedule("s", "report"), next_at(now))
        .await
        .unwrap();
    let first = firing("s", 1_000, now);
    let second = firing("s", 2_000, now);
    let advance = Some((1, next_at(now + chrono::TimeDelta::minutes(1))));
    let recorded = store
        .record_firings("s", &[first.clone(), second.clone()], advance)
        .await
        .unwrap();
    assert_eq!(recorded, Some(2));
    // Another instance that read version 1 records nothing.
    assert_eq!(
        store
            .record_firings("s", std::slice::from_ref(&first), advance)
            .await
            .unwrap(),
        None
    );
    // A manual firing of a nominal time already recorded is not recorded again.
    assert_eq!(
        store.record_firings("s", &[second], None).await.unwrap(),
        Some(0)
    );
    assert_eq!(
        store.record_firings("gone", &[first], None).await.unwrap(),
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
        .create_schedule(&schedule("due", "t"), next_at(past))
        .await
        .unwrap();
    store
        .create_schedule(&schedule("later", "t"), next_at(future))
        .await
        .unwrap();
    let mut paused = schedule("paused", "t");
    paused.paused = true;
    store.create_schedule(&paused, next_at(past)).await.unwrap();
    let due = store.due_schedules(10).await.unwrap();
    let ids: Vec<&str> = due.iter().map(|s| s.info.schedule_id.as_str()).collect();
    assert_eq!(ids, ["due"]);

    store
        .record_firings(
            "due",
            &[firing("due", 2, past), firing("due", 1, past)],
            None,
        )
        .await
        .unwrap();
    store
        .record_firings("later", &[firing("later", 1, future)], None)
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
            .create_schedule(&schedule(id, process_type), none)
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
        .record_firings("a", &[firing("a", 1, now)], None)
        .await
        .unwrap();
    assert!(store.delete_schedule("a").await.unwrap());
    assert!(!store.delete_schedule("a").await.unwrap());
    assert!(store.recent_firings("a", 10).await.unwrap().is_empty());
    assert!(store.get_schedule("a").await.unwrap().is_none());
}

async fn one_instance_at_a_time_starts_a_schedules_firings(store: impl ScheduleStore) {
    let none = NextFiring {
        nominal_ms: None,
        fire_at: None,
    };
    store
        .create_schedule(&schedule("s", "t"), none)
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
