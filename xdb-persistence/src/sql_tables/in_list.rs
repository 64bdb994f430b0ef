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
    }
}
