//! Pure text formatting: aligned tables, durations, timestamps.

use std::time::Duration;

/// A plain-text table: a header row, then rows, columns padded to the widest cell and
/// separated by two spaces; the last column is not padded.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let columns = header.len();
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (i, cell) in row.iter().enumerate().take(columns) {
            widths[i] = widths[i].max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let header: Vec<String> = header.iter().map(|h| h.to_string()).collect();
    for row in std::iter::once(&header).chain(rows) {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate().take(columns) {
            if i + 1 == columns {
                line.push_str(cell);
            } else {
                let pad = widths[i] - cell.chars().count();
                line.push_str(cell);
                line.push_str(&" ".repeat(pad + 2));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// Two-column "key: value" lines, keys padded to the longest.
pub fn key_values(pairs: &[(&str, String)]) -> String {
    let width = pairs.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    pairs
        .iter()
        .map(|(k, v)| format!("{k:<width$}  {v}\n"))
        .collect()
}

/// A duration as people read it: `850ms`, `12.3s`, `4m05s`, `2h03m`, `3d04h`.
pub fn duration(d: Duration) -> String {
    let ms = d.as_millis();
    let secs = d.as_secs();
    if ms < 1000 {
        format!("{ms}ms")
    } else if secs < 60 {
        format!("{:.1}s", d.as_secs_f64())
    } else if secs < 3600 {
        format!("{}m{:02}s", secs / 60, secs % 60)
    } else if secs < 86_400 {
        format!("{}h{:02}m", secs / 3600, (secs % 3600) / 60)
    } else {
        format!("{}d{:02}h", secs / 86_400, (secs % 86_400) / 3600)
    }
}

/// The time between two epoch-millisecond instants (0 if `end` is before `start`).
pub fn between_ms(start_ms: i64, end_ms: i64) -> Duration {
    Duration::from_millis(u64::try_from(end_ms.saturating_sub(start_ms)).unwrap_or(0))
}

/// Epoch milliseconds as a UTC time, `2024-05-01 12:00:00.123Z`.
pub fn timestamp_ms(ms: i64) -> String {
    match chrono::DateTime::from_timestamp_millis(ms) {
        Some(t) => t.format("%Y-%m-%d %H:%M:%S%.3fZ").to_string(),
        None => format!("{ms}ms"),
    }
}

/// `text` cut to `max` characters, with `…` at the end when cut.
pub fn truncate(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut cut: String = text.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// Parses a duration flag: seconds (`90`), or a number with `ms`, `s`, `m` or `h`.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: f64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a duration (e.g. 90, 30s, 5m, 1h)"))?;
    let scale = match unit {
        "" | "s" => 1.0,
        "ms" => 0.001,
        "m" => 60.0,
        "h" => 3600.0,
        "d" => 86400.0,
        _ => {
            return Err(format!(
                "unknown unit {unit:?} in {text:?} (use ms, s, m, h or d)"
            ))
        }
    };
    Duration::try_from_secs_f64(value * scale).map_err(|e| format!("{text:?}: {e}"))
}

/// Parses a time flag: RFC 3339 (`2024-05-01T12:00:00Z`) or epoch milliseconds.
pub fn parse_time_ms(text: &str) -> Result<i64, String> {
    let text = text.trim();
    if let Ok(ms) = text.parse::<i64>() {
        return Ok(ms);
    }
    if let Ok(time) = chrono::DateTime::parse_from_rfc3339(text) {
        return Ok(time.timestamp_millis());
    }
    if let Ok(date) = chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d") {
        return Ok(date
            .and_time(chrono::NaiveTime::MIN)
            .and_utc()
            .timestamp_millis());
    }
    // A duration with its unit reads as that long ago: --since 1h.
    if text.ends_with(|c: char| c.is_ascii_alphabetic()) {
        if let Ok(ago) = parse_duration(text) {
            let ago = i64::try_from(ago.as_millis()).unwrap_or(i64::MAX);
            return Ok(chrono::Utc::now().timestamp_millis().saturating_sub(ago));
        }
    }
    Err(format!(
        "{text:?} is not a time (RFC 3339 such as 2024-05-01T12:00:00Z, a date such as \
         2024-05-01 (UTC), epoch ms, or a duration ago such as 1h or 2d)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_read_as_instants_dates_or_durations_ago() {
        assert_eq!(parse_time_ms("1000"), Ok(1000));
        assert_eq!(parse_time_ms("2026-01-01"), Ok(1_767_225_600_000));
        assert_eq!(parse_time_ms("2026-01-01T00:00:01Z"), Ok(1_767_225_601_000));
        let ago = chrono::Utc::now().timestamp_millis() - parse_time_ms("2d").unwrap();
        assert!((172_800_000..172_900_000).contains(&ago), "{ago}");
        assert!(parse_time_ms("yesterday")
            .unwrap_err()
            .contains("duration ago"));
    }

    #[test]
    fn tables_align_columns() {
        let rows = vec![
            vec!["p-1".to_string(), "RUNNING".into(), "x".into()],
            vec!["process-22".to_string(), "FAILED".into(), "".into()],
        ];
        assert_eq!(
            table(&["ID", "STATUS", "NOTE"], &rows),
            "ID          STATUS   NOTE\n\
             p-1         RUNNING  x\n\
             process-22  FAILED\n"
        );
        assert_eq!(table(&["A"], &[]), "A\n");
    }

    #[test]
    fn key_values_pad_keys() {
        assert_eq!(
            key_values(&[("status", "RUNNING".into()), ("id", "p".into())]),
            "status  RUNNING\nid      p\n"
        );
    }

    #[test]
    fn durations_read_naturally() {
        assert_eq!(duration(Duration::from_millis(850)), "850ms");
        assert_eq!(duration(Duration::from_millis(12_340)), "12.3s");
        assert_eq!(duration(Duration::from_secs(245)), "4m05s");
        assert_eq!(
            duration(Duration::from_secs(2 * 3600 + 3 * 60 + 9)),
            "2h03m"
        );
        assert_eq!(
            duration(Duration::from_secs(3 * 86_400 + 4 * 3600)),
            "3d04h"
        );
        assert_eq!(between_ms(5_000, 1_000), Duration::ZERO);
        assert_eq!(between_ms(1_000, 3_500), Duration::from_millis(2_500));
    }

    #[test]
    fn timestamps_are_utc() {
        assert_eq!(timestamp_ms(0), "1970-01-01 00:00:00.000Z");
        assert_eq!(timestamp_ms(1_714_564_800_123), "2024-05-01 12:00:00.123Z");
    }

    #[test]
    fn truncates_long_text() {
        assert_eq!(truncate("abc", 3), "abc");
        assert_eq!(truncate("abcdef", 4), "abc…");
    }

    #[test]
    fn parses_durations_and_times() {
        assert_eq!(parse_duration("90"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("1.5h"), Ok(Duration::from_secs(5400)));
        assert!(parse_duration("5 weeks").is_err());
        assert!(parse_duration("x").is_err());
        assert_eq!(parse_time_ms("1714564800123"), Ok(1_714_564_800_123));
        assert_eq!(parse_time_ms("2024-05-01T12:00:00Z"), Ok(1_714_564_800_000));
        assert!(parse_time_ms("yesterday").is_err());
    }
}
