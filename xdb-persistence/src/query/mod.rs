//! Filtered lists and counts of executions: a JSON filter tree (`xdb_protocol::query`)
//! over execution fields and the business row, checked (`check`), then rendered once
//! over what each dialect supplies (`syntax`, `render`) into one parameterized
//! statement. This module owns the SQL of those statements; it never runs them (the
//! operations in `operations/query.rs` do, under a time limit) and never puts a
//! client's text into SQL except an identifier checked against the table's real
//! columns and quoted.

mod check;
mod plan;
mod render;
mod syntax;
mod values;

pub use check::QueryTable;
pub use values::{TypedValue, ValueType};

pub(crate) use check::{check_filter, check_group, Checked, Condition, Group, Subject, Test};
pub(crate) use plan::read_plan;
pub(crate) use render::{count, list, Join, Statement, SUMMARY_COLUMNS};
pub(crate) use syntax::{quoted, QuerySyntax};

/// Whether `tree` (or the group) compares a column of the business row, so that the
/// query needs the process type's table.
pub fn reads_business_row(
    tree: Option<&xdb_protocol::FilterNode>,
    group: Option<&xdb_protocol::CountGroupBy>,
) -> bool {
    use xdb_protocol::FilterNode;
    fn reads(node: &FilterNode) -> bool {
        match node {
            FilterNode::And(and) => and.and.iter().any(reads),
            FilterNode::Or(or) => or.or.iter().any(reads),
            FilterNode::Not(not) => reads(&not.not),
            FilterNode::Field(_) => false,
            FilterNode::Column(_) => true,
        }
    }
    tree.is_some_and(reads) || matches!(group, Some(xdb_protocol::CountGroupBy::Column(_)))
}
