//! Numbers for people: every value with its unit, never NaN or inf.

/// A latency in nanoseconds as `850 ns`, `412 µs`, `1.23 ms` or `2.001 s`.
pub fn duration_ns(ns: f64) -> String {
    if !ns.is_finite() {
        return "n/a".to_owned();
    }
    match ns {
        n if n < 1_000.0 => format!("{n:.0} ns"),
        n if n < 1_000_000.0 => format!("{:.0} µs", n / 1e3),
        n if n < 1_000_000_000.0 => format!("{:.2} ms", n / 1e6),
        n => format!("{:.3} s", n / 1e9),
    }
}

/// Seconds as `10.00 s`, `250 ms`.
pub fn seconds(s: f64) -> String {
    duration_ns(s * 1e9)
}

/// A count with thousands separators: `1,234,567`.
pub fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A rate as `98,765.4/s`.
pub fn rate(per_s: f64) -> String {
    if !per_s.is_finite() {
        return "n/a".to_owned();
    }
    format!("{}/s", tenths(per_s))
}

/// A number to one decimal with thousands separators, `10,571.3`, rounded (9.96 is `10.0`).
pub fn tenths(x: f64) -> String {
    if !x.is_finite() {
        return "n/a".to_owned();
    }
    let tenths = (x.abs() * 10.0).round() as u64;
    let sign = if x < 0.0 && tenths > 0 { "-" } else { "" };
    format!("{sign}{}.{}", count(tenths / 10), tenths % 10)
}

/// A p-value, one way everywhere (reports, checks, compare, history): `0.052`, `<0.001`.
pub fn p_value(p: f64) -> String {
    if p < 0.001 {
        "<0.001".to_owned()
    } else {
        format!("{p:.3}")
    }
}

/// A ratio in [0, 1] as `99.82%`.
pub fn percent(ratio: f64) -> String {
    if ratio.is_finite() {
        format!("{:.2}%", ratio * 100.0)
    } else {
        "n/a".to_owned()
    }
}

/// Bytes as `1.5 MB`, `11 B`.
pub fn bytes(n: u64) -> String {
    let n = n as f64;
    match n {
        n if n < 1e3 => format!("{n:.0} B"),
        n if n < 1e6 => format!("{:.1} kB", n / 1e3),
        n if n < 1e9 => format!("{:.1} MB", n / 1e6),
        n => format!("{:.2} GB", n / 1e9),
    }
}

/// Text from a run file or a server, made safe to print: control characters (ESC, BEL, CR,
/// newlines, C1 codes) and the invisible Unicode that reorders or hides text are shown as
/// escapes (`\u{1b}`), so a label or an error sample cannot retitle the terminal, move the
/// cursor or forge a line of the report.
pub fn clean(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(is_unsafe) {
        return std::borrow::Cow::Borrowed(text);
    }
    std::borrow::Cow::Owned(text.chars().fold(String::new(), |mut out, c| {
        if is_unsafe(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
        out
    }))
}

/// Like [`clean`], for whole reports: newlines and tabs stay, everything else is escaped.
pub fn clean_lines(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(|c| is_unsafe(c) && c != '\n' && c != '\t') {
        return std::borrow::Cow::Borrowed(text);
    }
    std::borrow::Cow::Owned(
        text.split('\n')
            .map(|line| {
                line.split('\t')
                    .map(|part| clean(part).into_owned())
                    .collect::<Vec<_>>()
                    .join("\t")
            })
            .collect::<Vec<_>>()
            .join("\n"),
    )
}

fn is_unsafe(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{feff}')
}

#[cfg(test)]
mod tests {
    #[test]
    fn p_values_have_one_format() {
        assert_eq!(super::p_value(0.23), "0.230");
        assert_eq!(super::p_value(0.0523), "0.052");
        assert_eq!(super::p_value(0.0009), "<0.001");
        assert_eq!(super::p_value(3.9e-9), "<0.001");
    }

    use super::*;

    #[test]
    fn control_characters_are_escaped() {
        // See #17, case 18: a label could retitle the terminal.
        assert_eq!(clean("x86_64"), "x86_64");
        assert_eq!(clean("é ünïcode µs"), "é ünïcode µs");
        assert_eq!(clean("\u{1b}]0;pwned\u{7}"), "\\u{1b}]0;pwned\\u{7}");
        assert_eq!(clean("a\rb\nc"), "a\\rb\\nc");
        assert_eq!(clean("\u{9b}31m"), "\\u{9b}31m");
        assert_eq!(clean("abc\u{202e}fed"), "abc\\u{202e}fed");
        assert_eq!(
            clean_lines("ok\n\tfine\u{1b}[2J\n"),
            "ok\n\tfine\\u{1b}[2J\n"
        );
    }

    #[test]
    fn durations_pick_a_readable_unit() {
        assert_eq!(duration_ns(850.0), "850 ns");
        assert_eq!(duration_ns(412_300.0), "412 µs");
        assert_eq!(duration_ns(1_234_567.0), "1.23 ms");
        assert_eq!(duration_ns(2_001_000_000.0), "2.001 s");
        assert_eq!(duration_ns(f64::NAN), "n/a");
    }

    #[test]
    fn counts_and_rates_group_thousands() {
        assert_eq!(count(0), "0");
        assert_eq!(count(999), "999");
        assert_eq!(count(1_234_567), "1,234,567");
        assert_eq!(rate(98_765.43), "98,765.4/s");
        // Rounded, not cut: 9.96 is 10.0, never 9.9.
        assert_eq!(rate(9.96), "10.0/s");
        assert_eq!(tenths(10_571.26), "10,571.3");
        assert_eq!(tenths(-0.04), "0.0");
        assert_eq!(tenths(-2.25), "-2.3");
        assert_eq!(rate(f64::INFINITY), "n/a");
        assert_eq!(percent(0.99821), "99.82%");
        assert_eq!(bytes(11), "11 B");
        assert_eq!(bytes(1_500_000), "1.5 MB");
    }
}
