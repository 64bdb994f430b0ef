//! `IN` lists of bound values, shaped so that few distinct statements are prepared.

/// `?, ?, …` for an `IN` list of the last `len` of `values`, padded to the next power
/// of two (the padding repeats the last value) so that only a handful of distinct
/// statements reach each connection's prepared-statement cache. An empty list is no
/// `IN` list (it would repeat a value before it): callers leave the condition out.
pub(crate) fn in_list<T: Clone>(values: &mut Vec<T>, len: usize) -> String {
    let padded = len.max(1).next_power_of_two();
    if let Some(last) = values.last().cloned() {
        values.extend(std::iter::repeat_n(last, padded - len));
    }
    vec!["?"; padded].join(", ")
}

/// `rows` padded alike: to a power of two by repeating the last, for statements with a
/// row of placeholders per item (a repeated row matches or claims the same row again,
/// which changes nothing the statement answers).
pub(crate) fn padded<T: Copy>(rows: &[T]) -> impl Iterator<Item = T> + '_ {
    let last = rows.last().copied();
    let padding = rows.len().max(1).next_power_of_two() - rows.len();
    rows.iter()
        .copied()
        .chain(std::iter::repeat_n(last, padding).flatten())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_lists_are_padded_to_powers_of_two() {
        let mut values = vec![1, 2, 3];
        assert_eq!(in_list(&mut values, 3), "?, ?, ?, ?");
        assert_eq!(values, vec![1, 2, 3, 3]);
        let mut one = vec![1];
        assert_eq!(in_list(&mut one, 1), "?");
        assert_eq!(one.len(), 1);
        assert_eq!(padded(&[1, 2, 3]).collect::<Vec<_>>(), [1, 2, 3, 3]);
        assert_eq!(padded::<i32>(&[]).count(), 0);
    }
}
