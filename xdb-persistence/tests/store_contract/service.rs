//! The service API's side: stop, id reuse, and list paging.

use std::collections::HashSet;

use xdb_engine::decide::DecideError;
use xdb_persistence::StoreError;
use xdb_protocol::*;
use xdb_test_util::Dialect;

use crate::common::*;

both!(
    concurrent_starts_of_one_id_start_it_once,
    stop_closes_the_execution_and_its_tasks,
    list_pages_newest_first_with_filters,
    the_factory_refuses_unknown_urls,
    the_schema_holds_one_strong_internal_secret,
);

async fn concurrent_starts_of_one_id_start_it_once(dialect: Dialect) {
    let h = harness(dialect).await;
    let starts = (0..8).map(|_| {
        let store = h.store.clone();
        tokio::spawn(async move { store.start_process(&start_request("p-race", "A")).await })
    });
    let mut started = 0;
    for result in futures::future::join_all(starts).await {
        match result.unwrap() {
            Ok(_) => started += 1,
            Err(StoreError::Decide(DecideError::AlreadyStarted(_))) => {}
            Err(other) => panic!("a racing start failed otherwise: {other:?}"),
        }
    }
    assert_eq!(started, 1);
    let all = h
        .store
        .list_processes(&ProcessExecutionListRequest::default())
        .await
        .unwrap();
    assert_eq!(all.executions.len(), 1);
}

async fn stop_closes_the_execution_and_its_tasks(dialect: Dialect) {
    let h = harness(dialect).await;
    let store = &*h.store;
    let first = store
        .start_process(&start_request("p-stop", "A"))
        .await
        .unwrap();
    // The default id-reuse policy refuses a second start while one runs.
    let error = store
        .start_process(&start_request("p-stop", "A"))
        .await
        .unwrap_err();
    assert!(
        matches!(error, StoreError::Decide(DecideError::AlreadyStarted(_))),
        "{error:?}"
    );

    let stop = ProcessExecutionStopRequest {
        process_execution_id: None,
        request_id: None,
        process_id: "p-stop".into(),
        stop_type: ProcessExecutionStopType::Fail,
        reason: Some("operator".into()),
    };
    let outcome = store.stop_process(&stop).await.unwrap().expect("it closed");
    assert_eq!(outcome.process_execution_id, first.to_string());
    assert_eq!(outcome.status, ProcessStatus::Failed);
    let described = describe(store, "p-stop").await;
    assert_eq!(described.process_execution_id, first.to_string());
    assert_eq!(described.status, ProcessStatus::Failed);
    assert!(described.close_timestamp_ms.is_some());
    assert_nothing_due(store, "w").await;
    assert!(matches!(
        store.stop_process(&stop).await,
        Err(StoreError::Decide(DecideError::NotRunning))
    ));
    assert!(matches!(
        store
            .stop_process(&ProcessExecutionStopRequest {
                process_execution_id: None,
                request_id: None,
                process_id: "nope".into(),
                stop_type: ProcessExecutionStopType::Terminate,
                reason: None,
            })
            .await,
        Err(StoreError::NotFound(_))
    ));

    // After a failure the id may be reused; describe follows the latest execution and
    // still finds the old one by its id.
    let second = store
        .start_process(&start_request("p-stop", "A"))
        .await
        .unwrap();
    assert_eq!(
        describe(store, "p-stop").await.process_execution_id,
        second.to_string()
    );
    let old = store
        .describe_process(&ProcessExecutionDescribeRequest {
            process_id: "p-stop".into(),
            process_execution_id: Some(first.to_string()),
        })
        .await
        .unwrap();
    assert_eq!(old.status, ProcessStatus::Failed);
    assert!(matches!(
        store
            .describe_process(&ProcessExecutionDescribeRequest {
                process_id: "p-stop".into(),
                process_execution_id: Some("not-a-uuid".into()),
            })
            .await,
        Err(StoreError::Decide(DecideError::Invalid(_)))
    ));
}

async fn list_pages_newest_first_with_filters(dialect: Dialect) {
    let h = harness(dialect).await;
    let store = &*h.store;
    let mut started = Vec::new();
    for i in 0..5 {
        let id = store
            .start_process(&start_request(&format!("p-list-{i}"), "A"))
            .await
            .unwrap();
        started.push(id.to_string());
    }
    store
        .stop_process(&ProcessExecutionStopRequest {
            process_execution_id: None,
            request_id: None,
            process_id: "p-list-1".into(),
            stop_type: ProcessExecutionStopType::Terminate,
            reason: None,
        })
        .await
        .unwrap();

    let mut seen = Vec::new();
    let mut token = None;
    let mut pages = 0;
    loop {
        let page = store
            .list_processes(&ProcessExecutionListRequest {
                filter: Default::default(),
                page_size: Some(2),
                next_page_token: token.clone(),
                ..Default::default()
            })
            .await
            .unwrap();
        pages += 1;
        assert!(page.executions.len() <= 2);
        seen.extend(page.executions);
        token = page.next_page_token;
        if token.is_none() {
            break;
        }
    }
    assert_eq!(pages, 3);
    let ids: Vec<String> = seen
        .iter()
        .map(|e| e.process_execution_id.clone())
        .collect();
    let mut newest_first = started.clone();
    newest_first.reverse();
    assert_eq!(ids, newest_first);
    assert_eq!(ids.iter().collect::<HashSet<_>>().len(), 5);
    assert!(seen
        .windows(2)
        .all(|w| w[0].start_timestamp_ms >= w[1].start_timestamp_ms));

    let list = |filter: ProcessExecutionListFilter| ProcessExecutionListRequest {
        filter,
        ..Default::default()
    };
    let terminated = store
        .list_processes(&list(ProcessExecutionListFilter {
            status: Some(ProcessStatus::Terminated),
            ..Default::default()
        }))
        .await
        .unwrap();
    assert_eq!(terminated.executions.len(), 1);
    assert_eq!(terminated.executions[0].process_id, "p-list-1");
    assert!(terminated.executions[0].close_timestamp_ms.is_some());
    let by_id = store
        .list_processes(&list(ProcessExecutionListFilter {
            process_id: Some("p-list-3".into()),
            process_type: Some("ContractTest".into()),
            start_time_min_ms: Some(0),
            ..Default::default()
        }))
        .await
        .unwrap();
    assert_eq!(by_id.executions.len(), 1);
    assert_eq!(by_id.next_page_token, None);
    let none = store
        .list_processes(&list(ProcessExecutionListFilter {
            start_time_max_ms: Some(0),
            ..Default::default()
        }))
        .await
        .unwrap();
    assert!(none.executions.is_empty());

    for bad in [
        ProcessExecutionListRequest {
            page_size: Some(0),
            ..Default::default()
        },
        ProcessExecutionListRequest {
            next_page_token: Some("garbage".into()),
            ..Default::default()
        },
    ] {
        assert!(
            matches!(
                store.list_processes(&bad).await,
                Err(StoreError::Decide(DecideError::Invalid(_)))
            ),
            "{bad:?}"
        );
    }
}

async fn the_factory_refuses_unknown_urls(dialect: Dialect) {
    let h = harness(dialect).await;
    // A second store on the same database through the factory sees the same rows.
    let other = xdb_persistence::connect(h.db.url(), 1).await.unwrap();
    h.store
        .start_process(&start_request("p-factory", "A"))
        .await
        .unwrap();
    assert_eq!(
        describe(&*other, "p-factory").await.status,
        ProcessStatus::Running
    );
    for url in ["sqlite://x.db", "just-a-name", "oracle://u:secret@h/db"] {
        let error = xdb_persistence::connect(url, 1)
            .await
            .err()
            .expect("refused");
        assert!(!error.to_string().contains("secret"), "{error}");
    }
}

async fn the_schema_holds_one_strong_internal_secret(dialect: Dialect) {
    let h = harness(dialect).await;
    let secret = h.store.internal_secret().await.unwrap();
    assert!(secret.len() >= 60, "{} characters", secret.len());
    assert!(secret.chars().all(|c| c.is_ascii_hexdigit()), "hex digits");
    assert_eq!(h.store.internal_secret().await.unwrap(), secret, "stable");
    let other = harness(dialect).await;
    assert_ne!(
        other.store.internal_secret().await.unwrap(),
        secret,
        "each database draws its own"
    );
}
