//! Parsers for flag values: rates, durations, headers.

use std::time::Duration;

/// The highest rate `--rate` accepts.
const MAX_RATE_PER_S: f64 = 10_000_000.0;
/// The lowest: one request an hour (`1/h`). Far slower schedules overflow the clock.
const MIN_RATE_PER_S: f64 = 1.0 / 3600.0;
/// The longest duration any flag takes: a year. Longer ones overflow the clock
/// (`-d 213503982334601d` panicked).
const MAX_DURATION: Duration = Duration::from_secs(365 * 86_400);

/// `--rate`: `20000`, `20k`, `1.5k`, `2M`, `20000/s`, `1200/m`, `72k/h`, and vegeta's
/// `50/1s`, `1000/1m`, `5/100ms`; `infinity`, `inf` or `0` mean no rate (closed loop).
/// `5m` is refused: it could be 5 million a second or 5 a minute. Returns requests per
/// second, `None` for unlimited.
pub(crate) fn rate(text: &str) -> Result<Option<f64>, String> {
    let err = || {
        format!(
            "invalid rate '{text}': expected a number with an optional k or M suffix and /s, /m, /h or /DURATION (e.g. 50/1s)"
        )
    };
    let t = text.trim();
    if matches!(
        t.to_ascii_lowercase().as_str(),
        "infinity" | "inf" | "unlimited" | "max"
    ) {
        return Ok(None);
    }
    let (number, per) = match t.split_once('/') {
        Some((n, unit)) => {
            let per = match unit {
                "s" | "sec" => 1.0,
                "m" | "min" => 60.0,
                "h" | "hour" => 3600.0,
                // vegeta's spelling: requests per a duration, 50/1s, 1000/1m.
                other => humantime::parse_duration(other)
                    .ok()
                    .filter(|d| !d.is_zero())
                    .map(|d| d.as_secs_f64())
                    .ok_or_else(err)?,
            };
            (n, per)
        }
        None => (t, 1.0),
    };
    if let Some(n) = number.strip_suffix('m') {
        return Err(format!(
            "rate '{text}' is ambiguous: for {n} million a second write {n}M, for {n} a minute write {n}/m"
        ));
    }
    let (digits, scale) = match number.as_bytes().last() {
        Some(b'k' | b'K') => (&number[..number.len() - 1], 1e3),
        Some(b'M') => (&number[..number.len() - 1], 1e6),
        _ => (number, 1.0),
    };
    let value: f64 = digits.parse().map_err(|_| err())?;
    if !value.is_finite() || value < 0.0 {
        return Err(err());
    }
    let per_s = value * scale / per;
    // Far beyond what one machine sends; a typo like 1e12 would queue requests until memory ran out.
    if per_s > MAX_RATE_PER_S {
        return Err(format!(
            "rate '{text}' is above 10,000,000/s, more than one machine can send: use a lower --rate"
        ));
    }
    if per_s > 0.0 && per_s < MIN_RATE_PER_S * (1.0 - 1e-9) {
        return Err(format!(
            "rate '{text}' is below one request an hour: give at least 1/h, or 0 for a closed loop"
        ));
    }
    Ok((per_s > 0.0).then_some(per_s))
}

/// The most stages a rate plan may have (each keeps its own histograms).
const MAX_STAGES: usize = 100;

/// A rate plan: stages separated by commas, each `RATE:DURATION` (hold the rate) or
/// `FROM->TO:DURATION` (ramp linearly), e.g. `0->20k:30s,20k:60s`.
pub(crate) fn rate_plan(text: &str) -> Result<vload_engine::RatePlan, String> {
    let stages: Vec<&str> = text.split(',').map(str::trim).collect();
    if stages.len() > MAX_STAGES {
        return Err(format!(
            "rate plan '{text}' has {} stages; vload runs at most {MAX_STAGES}",
            stages.len()
        ));
    }
    let parsed = stages
        .iter()
        .enumerate()
        .map(|(i, stage)| {
            plan_stage(stage).map_err(|why| format!("rate plan '{text}', stage {}: {why}", i + 1))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let plan =
        vload_engine::RatePlan::staged(parsed).map_err(|e| format!("rate plan '{text}': {e}"))?;
    if plan.duration().is_some_and(|d| d > MAX_DURATION) {
        return Err(format!(
            "rate plan '{text}' lasts longer than a year (365d), the longest vload takes"
        ));
    }
    Ok(plan)
}

/// One stage of a plan: `RATE:DURATION` or `FROM->TO:DURATION`.
fn plan_stage(stage: &str) -> Result<vload_engine::RateStage, String> {
    let shape = "expected RATE:DURATION (a hold) or FROM->TO:DURATION (a ramp), e.g. 0->20k:30s";
    let (rates, length) = stage
        .rsplit_once(':')
        .ok_or_else(|| format!("'{stage}' has no duration: {shape}"))?;
    let duration = duration(length)?;
    let (from, to) = match rates.split_once("->") {
        Some((from, to)) => (from, to),
        None => (rates, rates),
    };
    let one = |r: &str| match rate(r)? {
        Some(per_s) => Ok(per_s),
        None if r.trim().parse::<f64>() == Ok(0.0) => Ok(0.0),
        None => Err(format!(
            "'{r}': a stage needs a number of requests per second (0 pauses), not an unlimited rate"
        )),
    };
    Ok(vload_engine::RateStage {
        from_per_s: one(from)?,
        to_per_s: one(to)?,
        duration: Some(duration),
    })
}

/// The most steps a sweep may plan.
const MAX_STEPS: usize = 100;

/// `--rates`: `FROM..TO/STEP` (`1k..20k/1k`: 1k, 2k, … 20k) or a list (`1k,2k,5k,10k`); in
/// ascending order, each rate once.
pub(crate) fn rates(text: &str) -> Result<Vec<f64>, String> {
    let one = |r: &str| match rate(r)? {
        Some(per_s) => Ok(per_s),
        None => Err(format!(
            "--rates '{text}': '{r}' is not a rate a step can hold (above 0, not unlimited)"
        )),
    };
    let mut rates = if let Some((range, step)) = text.split_once("..") {
        let (to, step) = step
            .split_once('/')
            .ok_or_else(|| format!("--rates '{text}': a range needs a step, e.g. 1k..20k/1k"))?;
        let (from, to, step) = (one(range)?, one(to)?, one(step)?);
        if to < from {
            return Err(format!("--rates '{text}': the range runs downwards"));
        }
        let n = ((to - from) / step + 1e-9).floor() as usize + 1;
        if n > MAX_STEPS {
            return Err(format!(
                "--rates '{text}' makes {n} steps; a sweep runs at most {MAX_STEPS}: take a larger step, and --find-max to refine"
            ));
        }
        (0..n).map(|i| from + step * i as f64).collect::<Vec<f64>>()
    } else {
        text.split(',')
            .map(|r| one(r.trim()))
            .collect::<Result<_, _>>()?
    };
    rates.sort_by(f64::total_cmp);
    rates.dedup();
    if rates.len() > MAX_STEPS {
        return Err(format!(
            "--rates '{text}' lists {} steps; a sweep runs at most {MAX_STEPS}",
            rates.len()
        ));
    }
    Ok(rates)
}

/// `--fail-if` terms.
#[derive(Debug, Clone)]
pub(crate) struct FailIf(pub(crate) Vec<vload_analyze::thresholds::Threshold>);

/// `--expect-status`: the statuses that count as success.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ExpectStatus(pub(crate) Vec<vload_schema::StatusRange>);

/// `--fail-if` terms.
pub(crate) fn fail_if(text: &str) -> Result<FailIf, String> {
    vload_analyze::thresholds::parse(text).map(FailIf)
}

/// `--server-timing`: a metric name, a token of RFC 9110 (letters, digits and
/// ``!#$%&'*+-.^_`|~``).
pub(crate) fn server_timing(text: &str) -> Result<String, String> {
    let token = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
    if text.is_empty() || !text.bytes().all(token) {
        return Err(format!(
            "'{text}' is not a Server-Timing metric name: give one token, e.g. app or origin (the name before ';dur=')"
        ));
    }
    Ok(text.to_owned())
}

/// `--expect-status`: statuses (`204`), classes (`2xx`) and ranges (`200-299`, `2xx-3xx`),
/// separated by commas.
pub(crate) fn expect_status(text: &str) -> Result<ExpectStatus, String> {
    let shape = "expected statuses like 2xx,3xx or 200,204 or 200-299";
    let one = |t: &str| -> Result<(u16, u16), String> {
        let t = t.trim().to_ascii_lowercase();
        if let Some(class) = t.strip_suffix("xx") {
            let c: u16 = class
                .parse()
                .ok()
                .filter(|c| (1..=5).contains(c))
                .ok_or_else(|| format!("'{t}' is not a status class (1xx to 5xx): {shape}"))?;
            return Ok((c * 100, c * 100 + 99));
        }
        let s: u16 = t
            .parse()
            .ok()
            .filter(|s| (100..=599).contains(s))
            .ok_or_else(|| format!("'{t}' is not a status (100 to 599): {shape}"))?;
        Ok((s, s))
    };
    let mut ranges = Vec::new();
    for item in text.split(',').map(str::trim) {
        let (from, to) = match item.split_once('-') {
            Some((a, b)) => (one(a)?.0, one(b)?.1),
            None => one(item)?,
        };
        if from > to {
            return Err(format!("'{item}' runs backwards: {shape}"));
        }
        ranges.push(vload_schema::StatusRange { from, to });
    }
    // Adjacent ranges as one (2xx,3xx is 200-399), so the run file says it once.
    ranges.sort_by_key(|r| r.from);
    let mut merged: Vec<vload_schema::StatusRange> = Vec::new();
    for r in ranges {
        match merged.last_mut() {
            Some(last) if r.from <= last.to + 1 => last.to = last.to.max(r.to),
            _ => merged.push(r),
        }
    }
    Ok(ExpectStatus(merged))
}

/// A percentage above 0 and at most 100, `5` or `5%`, as a share (0.05).
pub(crate) fn percent(text: &str) -> Result<f64, String> {
    let number = text.trim().trim_end_matches('%').trim();
    match number.parse::<f64>() {
        Ok(p) if p > 0.0 && p <= 100.0 => Ok(p / 100.0),
        _ => Err(format!(
            "'{text}' is not a percentage above 0 and at most 100, e.g. 5 for ±5%"
        )),
    }
}

/// `--fail-if-regressed`'s margin: a percentage, with or without its sign (`5`, `5%`, `2.5%`).
pub(crate) fn percent_margin(text: &str) -> Result<f64, String> {
    let number = text.trim().trim_end_matches('%').trim();
    match number.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(format!(
            "'{text}' is not a percentage of 0 or more: give one such as 5 or 5%"
        )),
    }
}

/// A duration such as 10s, 1m30s or 500ms.
pub(crate) fn duration(text: &str) -> Result<Duration, String> {
    let d = humantime::parse_duration(text.trim()).map_err(|_| {
        format!("invalid duration '{text}': expected a number with a unit, like 10s, 500ms or 2m")
    })?;
    if d > MAX_DURATION {
        return Err(format!(
            "duration '{text}' is longer than a year (365d), the longest vload takes"
        ));
    }
    Ok(d)
}

/// `-H 'Name: value'`.
pub(crate) fn header(text: &str) -> Result<(http::HeaderName, http::HeaderValue), String> {
    let err = || format!("invalid header '{text}': expected 'Name: value'");
    let (name, value) = text.split_once(':').ok_or_else(err)?;
    let name = http::HeaderName::from_bytes(name.trim().as_bytes()).map_err(|_| err())?;
    let value = http::HeaderValue::from_str(value.trim()).map_err(|_| err())?;
    Ok((name, value))
}

/// `--http1-client lean|hyper`, `--http2-client lean|hyper`.
pub(crate) fn client(text: &str) -> Result<vload_engine::Client, String> {
    match text {
        "lean" => Ok(vload_engine::Client::Lean),
        "hyper" => Ok(vload_engine::Client::Hyper),
        _ => Err(format!("'{text}': expected lean or hyper")),
    }
}

/// `--shard I/N`: shard I (0-based) of N.
pub(crate) fn shard(text: &str) -> Result<vload_engine::Shard, String> {
    let bad = || {
        format!("'{text}' is not I/N: give the 0-based shard index and the shard count, e.g. 0/4")
    };
    let (i, n) = text.split_once('/').ok_or_else(bad)?;
    let (index, count): (u32, u32) = (
        i.trim().parse().map_err(|_| bad())?,
        n.trim().parse().map_err(|_| bad())?,
    );
    if count == 0 {
        return Err(format!("'{text}': the shard count must be at least 1"));
    }
    if index >= count {
        return Err(format!(
            "'{text}': shard indexes count from 0, so N shards are 0/N .. {}/N",
            count - 1
        ));
    }
    Ok(vload_engine::Shard { index, count })
}

/// `--start-at TIME`: RFC 3339 in UTC, or `+DURATION` from now (`+30s`, where GNU `date -d`
/// is missing), at most a day ahead.
pub(crate) fn start_at(text: &str) -> Result<std::time::SystemTime, String> {
    let at = if let Some(after) = text.strip_prefix('+') {
        let after = humantime::parse_duration(after)
            .map_err(|e| format!("'{text}' is not a time from now like +30s or +2m ({e})"))?;
        std::time::SystemTime::now() + after
    } else {
        humantime::parse_rfc3339_weak(text).map_err(|e| {
            format!(
                "'{text}' is not an RFC 3339 UTC time like 2026-11-22T10:00:00Z, nor a time from now like +30s ({e})"
            )
        })?
    };
    if at
        .duration_since(std::time::SystemTime::now())
        .is_ok_and(|ahead| ahead > Duration::from_secs(86_400))
    {
        return Err(format!(
            "'{text}' is more than a day ahead: is the date right?"
        ));
    }
    Ok(at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_accept_suffixes_and_units() {
        assert_eq!(rate("20000"), Ok(Some(20_000.0)));
        assert_eq!(rate("20k"), Ok(Some(20_000.0)));
        assert_eq!(rate("1.5k"), Ok(Some(1_500.0)));
        assert_eq!(rate("20000/s"), Ok(Some(20_000.0)));
        assert_eq!(rate("1200/m"), Ok(Some(20.0)));
        assert_eq!(rate("infinity"), Ok(None));
        assert_eq!(rate("0"), Ok(None));
    }

    /// See #35: `+30s` beside RFC 3339, for machines without GNU `date -d`.
    #[test]
    fn start_at_takes_a_time_from_now() {
        let before = std::time::SystemTime::now();
        let at = start_at("+30s").unwrap();
        let ahead = at.duration_since(before).unwrap();
        assert!(ahead >= Duration::from_secs(30), "{ahead:?}");
        assert!(ahead < Duration::from_secs(31 + 60), "{ahead:?}");
        assert!(start_at("+2m").is_ok());
        assert!(start_at("+soon").unwrap_err().contains("like +30s"));
        assert!(
            start_at("+2d")
                .unwrap_err()
                .contains("more than a day ahead")
        );
        assert!(start_at("tomorrow").unwrap_err().contains("RFC 3339"));
        assert!(start_at("2026-11-22T10:00:00Z").is_ok());
    }

    #[test]
    fn absurd_rates_are_refused() {
        assert!(rate("1e12").unwrap_err().contains("10,000,000/s"));
        assert_eq!(rate("10M"), Ok(Some(10_000_000.0)));
    }

    #[test]
    fn vegeta_rates_are_per_a_duration_and_5m_is_ambiguous() {
        assert_eq!(rate("50/1s"), Ok(Some(50.0)));
        assert_eq!(rate("1000/1m"), Ok(Some(1000.0 / 60.0)));
        assert_eq!(rate("5/100ms"), Ok(Some(50.0)));
        assert_eq!(rate("2k/2s"), Ok(Some(1_000.0)));
        let e = rate("5m").unwrap_err();
        assert!(
            e.contains("ambiguous") && e.contains("5M") && e.contains("5/m"),
            "{e}"
        );
        assert!(rate("5/0s").unwrap_err().contains("'5/0s'"));
    }

    #[test]
    fn bad_rates_name_the_input() {
        for bad in ["10kk", "fast", "-5", "10/d", ""] {
            let e = rate(bad).unwrap_err();
            assert!(e.contains(&format!("'{bad}'")), "{e}");
        }
    }

    #[test]
    fn rate_plans_hold_and_ramp() {
        let plan = rate_plan("0->20k:30s, 20k:1m,1200/m->0:500ms").unwrap();
        let stages = plan.stages();
        assert_eq!(stages.len(), 3);
        assert_eq!((stages[0].from_per_s, stages[0].to_per_s), (0.0, 20_000.0));
        assert_eq!(stages[0].duration, Some(Duration::from_secs(30)));
        assert_eq!(
            (stages[1].from_per_s, stages[1].to_per_s),
            (20_000.0, 20_000.0)
        );
        assert_eq!((stages[2].from_per_s, stages[2].to_per_s), (20.0, 0.0));
        assert_eq!(plan.duration(), Some(Duration::from_millis(90_500)));
    }

    #[test]
    fn bad_rate_plans_name_the_stage_and_the_fix() {
        for (bad, says) in [
            ("1k:10s,2k", "stage 2: '2k' has no duration"),
            ("1k:10s,fast:5s", "stage 2: invalid rate 'fast'"),
            ("inf:10s", "not an unlimited rate"),
            ("0:10s", "nothing would be sent"),
            ("1k:0s", "lasts 0s"),
            ("1k->:10s", "invalid rate ''"),
            ("1k:10", "invalid duration '10'"),
            ("1k:200d,1k:200d", "longer than a year"),
        ] {
            let e = rate_plan(bad).unwrap_err();
            assert!(e.contains(says) && e.contains(bad), "{bad}: {e}");
        }
        let many = vec!["1k:1s"; 101].join(",");
        assert!(rate_plan(&many).unwrap_err().contains("at most 100"));
    }

    #[test]
    fn sweep_rates_are_ranges_or_lists() {
        assert_eq!(rates("1k..5k/1k"), Ok(vec![1e3, 2e3, 3e3, 4e3, 5e3]));
        assert_eq!(rates("100..350/100"), Ok(vec![100.0, 200.0, 300.0]));
        assert_eq!(rates("5k, 1k,2k,1k"), Ok(vec![1e3, 2e3, 5e3]));
        for (bad, says) in [
            ("1k..5k", "needs a step"),
            ("5k..1k/1k", "downwards"),
            ("1..1000/1", "at most 100"),
            ("1k,inf", "not a rate a step can hold"),
            ("1k,0", "not a rate a step can hold"),
            ("1k,x", "invalid rate 'x'"),
        ] {
            let e = rates(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn headers_need_a_colon() {
        let (n, v) = header("X-Test:  yes ").unwrap();
        assert_eq!((n.as_str(), v.to_str().unwrap()), ("x-test", "yes"));
        assert!(header("no colon").is_err());
        assert!(header("bad name: x").is_err());
    }

    #[test]
    fn durations_have_units() {
        assert_eq!(duration("500ms"), Ok(Duration::from_millis(500)));
        assert!(duration("10").unwrap_err().contains("'10'"));
    }

    #[test]
    fn durations_and_rates_that_overflow_the_clock_are_refused() {
        // See #17, case 15: both panicked.
        assert!(
            duration("213503982334601d")
                .unwrap_err()
                .contains("longer than a year")
        );
        assert_eq!(duration("365d"), Ok(Duration::from_secs(365 * 86_400)));
        assert!(
            rate("1e-19")
                .unwrap_err()
                .contains("below one request an hour")
        );
        assert_eq!(rate("1/h"), Ok(Some(1.0 / 3600.0)));
        assert!(rate("NaN").is_err());
    }
}
