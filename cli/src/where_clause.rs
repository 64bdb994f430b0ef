//! The readable filter of `xdb list --where` and `xdb count --where`: an SQL boolean
//! expression, parsed by sqlparser, turned into the service's filter tree. The text never
//! reaches the service as SQL; the tree does, and the service checks it again.
//!
//! Bare names are columns of the business row (`amount > 10`, `form->>'email' = 'a@b'`);
//! `execution.<field>` names a field of the execution (`execution.status = 'RUNNING'`).
//! `LIKE` takes `'abc%'`, `'%abc'` and `'%abc%'` (PREFIX, SUFFIX, CONTAINS), no other
//! pattern.

use serde_json::Value;
use sqlparser::ast::{BinaryOperator, Expr, InTarget, UnaryOperator, Value as SqlValue};
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::Token;
use xdb_protocol::{
    ColumnCondition, ExecutionField, FieldCondition, FilterAnd, FilterNode, FilterNot, FilterOp,
    FilterOr,
};

/// Parses `text` into a filter tree, or says what it cannot take and why.
pub fn parse_where(text: &str) -> Result<FilterNode, String> {
    let dialect = PostgreSqlDialect {};
    let mut parser = Parser::new(&dialect)
        .try_with_sql(text)
        .map_err(|e| format!("--where: {e}"))?;
    let expr = parser.parse_expr().map_err(|e| format!("--where: {e}"))?;
    let rest = parser.peek_token();
    if rest.token != Token::EOF {
        return Err(format!(
            "--where: unexpected '{}' after the condition (one expression, no statements)",
            rest.token
        ));
    }
    node(&expr).map_err(|e| format!("--where: {e}"))
}

fn node(expr: &Expr) -> Result<FilterNode, String> {
    match expr {
        Expr::Nested(inner) => node(inner),
        Expr::BinaryOp {
            left,
            op: BinaryOperator::And,
            right,
        } => {
            let mut and = Vec::new();
            for side in [left, right] {
                match node(side)? {
                    FilterNode::And(inner) => and.extend(inner.and),
                    other => and.push(other),
                }
            }
            Ok(FilterNode::And(FilterAnd { and }))
        }
        Expr::BinaryOp {
            left,
            op: BinaryOperator::Or,
            right,
        } => {
            let mut or = Vec::new();
            for side in [left, right] {
                match node(side)? {
                    FilterNode::Or(inner) => or.extend(inner.or),
                    other => or.push(other),
                }
            }
            Ok(FilterNode::Or(FilterOr { or }))
        }
        Expr::UnaryOp {
            op: UnaryOperator::Not,
            expr,
        } => Ok(not(node(expr)?)),
        Expr::BinaryOp { left, op, right } => {
            let op = match op {
                BinaryOperator::Eq => FilterOp::Eq,
                BinaryOperator::NotEq => FilterOp::Ne,
                BinaryOperator::Lt => FilterOp::Lt,
                BinaryOperator::LtEq => FilterOp::Le,
                BinaryOperator::Gt => FilterOp::Gt,
                BinaryOperator::GtEq => FilterOp::Ge,
                other => return Err(format!("operator {other} is not supported")),
            };
            condition(left, op, Some(literal(right)?), None)
        }
        Expr::IsNull(subject) => condition(subject, FilterOp::IsNull, None, None),
        Expr::IsNotNull(subject) => condition(subject, FilterOp::IsNotNull, None, None),
        Expr::In {
            expr: subject,
            target: InTarget::List(items),
            negated,
            ..
        } => {
            let values = items.iter().map(literal).collect::<Result<Vec<_>, _>>()?;
            let found = condition(subject, FilterOp::In, None, Some(values))?;
            Ok(if *negated { not(found) } else { found })
        }
        Expr::Like {
            negated,
            expr: subject,
            pattern,
            escape_char: None,
            any: false,
        } => {
            let Value::String(pattern) = literal(pattern)? else {
                return Err("LIKE takes a quoted pattern".into());
            };
            let (op, text) = like_pattern(&pattern)?;
            let found = condition(subject, op, Some(text.into()), None)?;
            Ok(if *negated { not(found) } else { found })
        }
        other => Err(format!(
            "'{other}' is not a condition (conditions compare a column or \
             execution.<field> with values: =, !=, <, <=, >, >=, IN, IS NULL, \
             LIKE 'abc%' / '%abc' / '%abc%')"
        )),
    }
}

/// The text operator a LIKE pattern stands for: `abc%` PREFIX, `%abc` SUFFIX, `%abc%`
/// CONTAINS; the text between the `%`s is matched as it is.
fn like_pattern(pattern: &str) -> Result<(FilterOp, &str), String> {
    let (starts, rest) = match pattern.strip_prefix('%') {
        Some(rest) => (false, rest),
        None => (true, pattern),
    };
    let (ends, text) = match rest.strip_suffix('%') {
        Some(text) => (false, text),
        None => (true, rest),
    };
    let op = match (starts, ends) {
        (true, false) => FilterOp::Prefix,
        (false, true) => FilterOp::Suffix,
        (false, false) => FilterOp::Contains,
        (true, true) => return Err(unsupported_like(pattern)),
    };
    if text.contains(['%', '_']) {
        return Err(unsupported_like(pattern));
    }
    Ok((op, text))
}

fn unsupported_like(pattern: &str) -> String {
    format!(
        "LIKE '{pattern}': only 'abc%' (starts with), '%abc' (ends with) and '%abc%' \
         (contains) are supported; '_', and '%' anywhere else, are not (use = for an \
         exact match)"
    )
}

fn not(node: FilterNode) -> FilterNode {
    FilterNode::Not(FilterNot {
        not: Box::new(node),
    })
}

/// A condition on `subject`: `execution.<field>`, a column, or a JSON path into one.
fn condition(
    subject: &Expr,
    op: FilterOp,
    value: Option<Value>,
    values: Option<Vec<Value>>,
) -> Result<FilterNode, String> {
    if let Expr::CompoundIdentifier(parts) = subject {
        if let [scope, name] = parts.as_slice() {
            if scope.value.eq_ignore_ascii_case("execution") {
                let field = execution_field(&name.value)?;
                // Status names are upper case on the wire; accept any case here.
                let upper = |v: Value| match (field, v) {
                    (ExecutionField::Status, Value::String(s)) => {
                        Value::String(s.to_ascii_uppercase())
                    }
                    (_, v) => v,
                };
                return Ok(FilterNode::Field(FieldCondition {
                    field,
                    op,
                    value: value.map(upper),
                    values: values.map(|vs| vs.into_iter().map(upper).collect()),
                }));
            }
        }
        return Err(format!(
            "'{subject}': a name is a column of the business row, or execution.<field>"
        ));
    }
    let (column, path) = column_and_path(subject)?;
    Ok(FilterNode::Column(ColumnCondition {
        column,
        path: (!path.is_empty()).then_some(path),
        op,
        value,
        values,
    }))
}

/// `col`, or `col->'a'->>'b'`: the column and the keys of the path.
fn column_and_path(subject: &Expr) -> Result<(String, Vec<String>), String> {
    match subject {
        Expr::Identifier(ident) => Ok((ident.value.clone(), Vec::new())),
        Expr::BinaryOp {
            left,
            op: BinaryOperator::Arrow | BinaryOperator::LongArrow,
            right,
        } => {
            let (column, mut path) = column_and_path(left)?;
            match literal(right)? {
                Value::String(key) => path.push(key),
                other => return Err(format!("a JSON path key is quoted text, not {other}")),
            }
            Ok((column, path))
        }
        other => Err(format!(
            "'{other}' is not a column (a name, execution.<field>, or column->'key')"
        )),
    }
}

fn execution_field(name: &str) -> Result<ExecutionField, String> {
    let normalized: String = name
        .chars()
        .filter(|c| *c != '_')
        .flat_map(char::to_lowercase)
        .collect();
    Ok(match normalized.as_str() {
        "status" => ExecutionField::Status,
        "processtype" | "type" => ExecutionField::ProcessType,
        "processid" | "id" => ExecutionField::ProcessId,
        "starttime" => ExecutionField::StartTime,
        "closetime" => ExecutionField::CloseTime,
        "paused" => ExecutionField::Paused,
        "currentstateid" | "state" => ExecutionField::CurrentStateId,
        "parked" => ExecutionField::Parked,
        "backingoff" => ExecutionField::BackingOff,
        "waitingontimer" => ExecutionField::WaitingOnTimer,
        "waitingonqueue" => ExecutionField::WaitingOnQueue,
        "deploymentname" => ExecutionField::DeploymentName,
        "deploymentversion" => ExecutionField::DeploymentVersion,
        "priority" => ExecutionField::Priority,
        _ => {
            return Err(format!(
                "execution.{name}: no such field (status, processType, processId, \
                 startTime, closeTime, paused, currentStateId, parked, backingOff, \
                 waitingOnTimer, waitingOnQueue, deploymentName, deploymentVersion, \
                 priority)"
            ))
        }
    })
}

/// A literal: quoted text, a number, true or false.
fn literal(expr: &Expr) -> Result<Value, String> {
    match expr {
        Expr::Value(v) => match &v.value {
            SqlValue::SingleQuotedString(s) => Ok(Value::String(s.clone())),
            SqlValue::Boolean(b) => Ok(Value::Bool(*b)),
            SqlValue::Number(n, _) => number(n),
            SqlValue::Null => Err("compare with NULL by IS NULL or IS NOT NULL".into()),
            other => Err(format!("{other} is not a value this filter takes")),
        },
        Expr::UnaryOp {
            op: UnaryOperator::Minus,
            expr,
        } => match literal(expr)? {
            Value::Number(n) => number(&format!("-{n}")),
            other => Err(format!("-{other} is not a number")),
        },
        other => Err(format!(
            "'{other}' is not a value (quoted text, a number, true or false)"
        )),
    }
}

fn number(text: &str) -> Result<Value, String> {
    serde_json::from_str::<serde_json::Number>(text)
        .map(Value::Number)
        .map_err(|_| format!("{text} is not a number"))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn tree(text: &str) -> Value {
        serde_json::to_value(parse_where(text).unwrap()).unwrap()
    }

    #[test]
    fn the_issues_example_reads_as_a_tree() {
        assert_eq!(
            tree("status = 'waiting' and form->>'email' like 'ann%'"),
            json!({"and": [
                {"column": "status", "op": "=", "value": "waiting"},
                {"column": "form", "path": ["email"], "op": "PREFIX", "value": "ann"}
            ]})
        );
    }

    #[test]
    fn execution_fields_groups_and_negations() {
        assert_eq!(
            tree(
                "execution.status in ('running', 'failed') and not (amount >= -2.5 or \
                 tier is null) and execution.process_type != 'T' and paid is not null"
            ),
            json!({"and": [
                {"field": "status", "op": "IN", "values": ["RUNNING", "FAILED"]},
                {"not": {"or": [
                    {"column": "amount", "op": ">=", "value": -2.5},
                    {"column": "tier", "op": "IS NULL"}
                ]}},
                {"field": "processType", "op": "!=", "value": "T"},
                {"column": "paid", "op": "IS NOT NULL"}
            ]})
        );
        assert_eq!(
            tree("x not in (1, 2) or y not like 'a%' or z = true"),
            json!({"or": [
                {"not": {"column": "x", "op": "IN", "values": [1, 2]}},
                {"not": {"column": "y", "op": "PREFIX", "value": "a"}},
                {"column": "z", "op": "=", "value": true}
            ]})
        );
    }

    #[test]
    fn like_patterns_map_to_text_operators() {
        assert_eq!(
            tree(
                "form->>'email' like '%@example.com' and note like '%50%' \
                 and execution.process_id like 'order-%' and tier not like '%old'"
            ),
            json!({"and": [
                {"column": "form", "path": ["email"], "op": "SUFFIX", "value": "@example.com"},
                {"column": "note", "op": "CONTAINS", "value": "50"},
                {"field": "processId", "op": "PREFIX", "value": "order-"},
                {"not": {"column": "tier", "op": "SUFFIX", "value": "old"}}
            ]})
        );
    }

    #[test]
    fn the_situation_fields_and_relative_times() {
        assert_eq!(
            tree(
                "execution.parked = true or execution.backing_off != false \
                 or execution.waitingOnTimer = true or execution.waiting_on_queue in ('a') \
                 or execution.deployment_version = 'v2' or execution.deploymentName is null \
                 or execution.startTime >= '-1h' or execution.priority < 3"
            ),
            json!({"or": [
                {"field": "parked", "op": "=", "value": true},
                {"field": "backingOff", "op": "!=", "value": false},
                {"field": "waitingOnTimer", "op": "=", "value": true},
                {"field": "waitingOnQueue", "op": "IN", "values": ["a"]},
                {"field": "deploymentVersion", "op": "=", "value": "v2"},
                {"field": "deploymentName", "op": "IS NULL"},
                {"field": "startTime", "op": ">=", "value": "-1h"},
                {"field": "priority", "op": "<", "value": 3}
            ]})
        );
    }

    #[test]
    fn what_the_tree_cannot_say_is_refused_by_name() {
        for (text, expected) in [
            ("amount + 1 > 2", "is not a column"),
            ("amount = other", "is not a value"),
            ("email like 'a%b'", "only 'abc%'"),
            ("email like 'a_%'", "only 'abc%'"),
            ("email like '%a%b%'", "only 'abc%'"),
            ("email like 'abc'", "use = for an exact match"),
            ("amount = null", "IS NULL"),
            ("execution.colour = 'red'", "no such field"),
            ("a.b = 1", "execution.<field>"),
            ("amount", "is not a condition"),
            ("amount > ", "--where"),
            ("amount = 1; drop table t", "unexpected ';'"),
        ] {
            let error = parse_where(text).unwrap_err();
            assert!(error.contains(expected), "{text}: {error}");
        }
    }
}
