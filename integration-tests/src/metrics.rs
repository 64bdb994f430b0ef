//! Reading a Prometheus text exposition (`/metrics`) in tests.

/// The sum of the samples of `name` whose labels include every pair of `labels`; `None`
/// when no sample matches (the series was never created).
pub fn sample_sum(text: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let mut sum = None;
    for line in text.lines().filter(|line| !line.starts_with('#')) {
        let Some((series, value)) = line.rsplit_once(' ') else {
            continue;
        };
        let (series_name, series_labels) = match series.split_once('{') {
            Some((series_name, rest)) => (series_name, rest.trim_end_matches('}')),
            None => (series, ""),
        };
        let matches = series_name == name
            && labels.iter().all(|(key, wanted)| {
                series_labels
                    .split(',')
                    .any(|pair| pair == format!("{key}=\"{wanted}\""))
            });
        if matches {
            let value: f64 = value.parse().expect("a sample value is a number");
            *sum.get_or_insert(0.0) += value;
        }
    }
    sum
}

/// Fetches `base_url/metrics`, asserting it answers 200 in the text format.
pub async fn scrape(base_url: &str) -> String {
    scrape_with(base_url, None).await
}

/// [`scrape`] with a bearer token (the API service's `/metrics` takes the `read` role
/// when tokens are configured).
pub async fn scrape_with(base_url: &str, token: Option<&str>) -> String {
    let mut request = reqwest::Client::new().get(format!("{base_url}/metrics"));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.expect("GET /metrics");
    assert_eq!(response.status(), 200, "GET {base_url}/metrics");
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default()
        .to_string();
    assert!(
        content_type.starts_with("text/plain"),
        "unexpected content type {content_type}"
    );
    response.text().await.expect("a text body")
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "\
# HELP xdb_x_total X.
# TYPE xdb_x_total counter
xdb_x_total{outcome=\"ok\",task_type=\"EXECUTE\"} 2
xdb_x_total{outcome=\"ok\",task_type=\"TIMER\"} 1
xdb_x_total{outcome=\"error\",task_type=\"TIMER\"} 4
xdb_gauge 7
";

    #[test]
    fn sums_the_series_matching_every_label() {
        assert_eq!(
            sample_sum(TEXT, "xdb_x_total", &[("outcome", "ok")]),
            Some(3.0)
        );
        assert_eq!(
            sample_sum(
                TEXT,
                "xdb_x_total",
                &[("task_type", "TIMER"), ("outcome", "error")]
            ),
            Some(4.0)
        );
        assert_eq!(sample_sum(TEXT, "xdb_gauge", &[]), Some(7.0));
        assert_eq!(
            sample_sum(TEXT, "xdb_x_total", &[("outcome", "stale")]),
            None
        );
        assert_eq!(sample_sum(TEXT, "xdb_x", &[]), None);
    }
}
