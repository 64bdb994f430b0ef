//! The executions `list`, `count` and `batch start` select, read one way from their flags.

use xdb_protocol::*;

use crate::args::*;

/// The executions `--type`, `--status`, `--since`, `--until`, `--where` and
/// `--table/--key` select: the one reading of those flags by `list`, `count` and
/// `batch start`. `list` sends the status, type and start times as its typed filter,
/// `count` and `batch start` as conditions of their `where` tree: the service reads both
/// as the same conditions, so the three select the same executions.
#[derive(Debug, Clone, PartialEq)]
pub struct Selection {
    pub process_type: Option<String>,
    pub status: Option<ProcessStatus>,
    pub since_ms: Option<i64>,
    pub until_ms: Option<i64>,
    pub where_: Option<FilterNode>,
    pub business_table: Option<BusinessTableRef>,
}

impl Selection {
    pub fn of(a: &SelectionArgs) -> Self {
        Self {
            process_type: a.process_type.clone(),
            status: a.status.map(|s| match s {
                Status::Running => ProcessStatus::Running,
                Status::Completed => ProcessStatus::Completed,
                Status::Failed => ProcessStatus::Failed,
                Status::Timeout => ProcessStatus::Timeout,
                Status::Terminated => ProcessStatus::Terminated,
            }),
            since_ms: a.since,
            until_ms: a.until,
            where_: a.where_.clone(),
            business_table: a.business_table(),
        }
    }

    /// The status and start-time bounds as conditions, and `--where`, in one tree (all
    /// must match); `None` when nothing narrows the selection but the type.
    pub fn where_tree(&self) -> Option<FilterNode> {
        let field = |field, op, value: serde_json::Value| {
            FilterNode::Field(FieldCondition {
                field,
                op,
                value: Some(value),
                values: None,
            })
        };
        let mut all = Vec::new();
        if let Some(status) = self.status {
            all.push(field(
                ExecutionField::Status,
                FilterOp::Eq,
                status.as_str().into(),
            ));
        }
        if let Some(ms) = self.since_ms {
            all.push(field(ExecutionField::StartTime, FilterOp::Ge, ms.into()));
        }
        if let Some(ms) = self.until_ms {
            all.push(field(ExecutionField::StartTime, FilterOp::Lt, ms.into()));
        }
        all.extend(self.where_.clone());
        match all.len() {
            0 => None,
            1 => all.pop(),
            _ => Some(FilterNode::And(FilterAnd { and: all })),
        }
    }

    /// The count of this selection (optionally per group).
    pub fn count_request(&self, group_by: Option<CountGroupBy>) -> ProcessExecutionCountRequest {
        ProcessExecutionCountRequest {
            process_type: self.process_type.clone(),
            where_: self.where_tree(),
            business_table: self.business_table.clone(),
            group_by,
            explain: false,
        }
    }
}

pub fn list_request(a: &ListArgs) -> ProcessExecutionListRequest {
    let selection = Selection::of(&a.selection);
    ProcessExecutionListRequest {
        filter: ProcessExecutionListFilter {
            status: selection.status,
            process_type: selection.process_type,
            process_id: a.process_id.clone(),
            start_time_min_ms: selection.since_ms,
            start_time_max_ms: selection.until_ms,
        },
        page_size: a.page_size,
        next_page_token: a.page_token.clone(),
        where_: selection.where_,
        business_table: selection.business_table,
        explain: a.explain,
    }
}

pub fn count_request(a: &CountArgs) -> ProcessExecutionCountRequest {
    let group_by = a.group_by.as_deref().map(|name| {
        if let Some(column) = name.strip_prefix("column:") {
            return CountGroupBy::Column(GroupByColumn {
                column: column.to_string(),
            });
        }
        match name.to_ascii_lowercase().replace('_', "").as_str() {
            "status" => CountGroupBy::Field(GroupByField {
                field: GroupField::Status,
            }),
            "type" | "processtype" => CountGroupBy::Field(GroupByField {
                field: GroupField::ProcessType,
            }),
            "state" | "currentstateid" => CountGroupBy::Field(GroupByField {
                field: GroupField::CurrentStateId,
            }),
            "priority" => CountGroupBy::Field(GroupByField {
                field: GroupField::Priority,
            }),
            _ => CountGroupBy::Column(GroupByColumn {
                column: name.to_string(),
            }),
        }
    });
    ProcessExecutionCountRequest {
        explain: a.explain,
        ..Selection::of(&a.selection).count_request(group_by)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::requests::tests::command;
    use serde_json::json;

    #[test]
    fn list_request_maps_filters() {
        let Command::List(a) = command(&["list", "--status", "FAILED", "-t", "T", "--until", "5"])
        else {
            panic!()
        };
        let r = list_request(&a);
        assert_eq!(r.filter.status, Some(ProcessStatus::Failed));
        assert_eq!(r.filter.process_type.as_deref(), Some("T"));
        assert_eq!(r.filter.start_time_max_ms, Some(5));
        assert_eq!(r.where_, None);
    }

    #[test]
    fn count_selects_what_list_does_as_one_tree() {
        let Command::Count(a) = command(&[
            "count",
            "--status",
            "RUNNING",
            "-t",
            "T",
            "--since",
            "1000",
            "--until",
            "2000",
            "--where",
            "amount > 5",
            "--table",
            "orders",
            "--key",
            "id",
        ]) else {
            panic!()
        };
        let r = serde_json::to_value(count_request(&a)).unwrap();
        assert_eq!(
            r,
            json!({
                "processType": "T",
                "where": {"and": [
                    {"field": "status", "op": "=", "value": "RUNNING"},
                    {"field": "startTime", "op": ">=", "value": 1000},
                    {"field": "startTime", "op": "<", "value": 2000},
                    {"column": "amount", "op": ">", "value": 5}
                ]},
                "businessTable": {"tableName": "orders", "primaryKeyColumn": "id"},
                "groupBy": null
            })
        );
        // One condition is sent as is; none sends no tree.
        let Command::Count(a) = command(&["count", "--where", "amount > 5"]) else {
            panic!()
        };
        assert_eq!(
            serde_json::to_value(count_request(&a)).unwrap()["where"],
            json!({"column": "amount", "op": ">", "value": 5})
        );
        let Command::Count(a) = command(&["count"]) else {
            panic!()
        };
        assert_eq!(count_request(&a).where_, None);
    }
}
