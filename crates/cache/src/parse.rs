//! Sizes and capacities as users write them: `4096`, `16k`, `64MiB`, `5000obj`.

/// Bytes from `4096`, `16k`, `1.5M`, `64MiB` or `2G`. k, M and G are powers of 1024, as in
/// Varnish's `-s malloc,64M`; `KB`, `KiB` and friends mean the same.
///
/// # Errors
/// Not a number with one of those units, or more than 2^63 bytes.
pub fn parse_bytes(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let scale: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        _ => {
            return Err(format!(
                "'{text}' is not a size: expected bytes like 4096, 16k, 64MiB or 2G"
            ));
        }
    };
    let value: f64 = number.parse().map_err(|_| {
        format!("'{text}' is not a size: expected bytes like 4096, 16k, 64MiB or 2G")
    })?;
    let bytes = value * scale as f64;
    if !(bytes.is_finite() && bytes < 9.2e18) {
        return Err(format!("'{text}' is too large a size"));
    }
    Ok(bytes.round() as u64)
}

/// `4096`, `16k`, `64M`: the shortest exact form, for records and reports.
pub(crate) fn bytes_text(b: u64) -> String {
    for (unit, scale) in [("G", 1u64 << 30), ("M", 1 << 20), ("k", 1 << 10)] {
        if b >= scale && b.is_multiple_of(scale) {
            return format!("{}{unit}", b / scale);
        }
    }
    b.to_string()
}

/// A max-age, or a range each object draws from: `300`, `5m`, `60-600`, `1m-10m`.
///
/// # Errors
/// Not seconds or durations, or a range upside down.
pub fn parse_ttl(text: &str) -> Result<(u64, u64), String> {
    let (lo, hi) = match text.split_once('-') {
        Some((lo, hi)) => (parse_seconds(lo)?, parse_seconds(hi)?),
        None => {
            let t = parse_seconds(text)?;
            (t, t)
        }
    };
    if lo > hi {
        return Err(format!("'{text}': the lower TTL is above the upper"));
    }
    Ok((lo, hi))
}

/// Seconds from `300`, `300s`, `5m`, `1h`.
fn parse_seconds(text: &str) -> Result<u64, String> {
    let t = text.trim();
    if let Ok(n) = t.parse::<u64>() {
        return Ok(n);
    }
    humantime::parse_duration(t)
        .map(|d| d.as_secs())
        .map_err(|_| format!("'{text}' is not a TTL: expected seconds like 300, 300s, 5m or 1h"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_like_varnish() {
        assert_eq!(parse_bytes("4096"), Ok(4096));
        assert_eq!(parse_bytes("16k"), Ok(16 << 10));
        assert_eq!(parse_bytes("64MiB"), Ok(64 << 20));
        assert_eq!(parse_bytes("1.5M"), Ok(3 << 19));
        assert_eq!(parse_bytes("2G"), Ok(2 << 30));
        assert!(
            parse_bytes("12 parsecs")
                .unwrap_err()
                .contains("12 parsecs")
        );
        assert!(parse_bytes("").is_err());
        assert_eq!(bytes_text(64 << 20), "64M");
        assert_eq!(bytes_text(1500), "1500");
    }

    #[test]
    fn ttls_take_seconds_or_durations() {
        assert_eq!(parse_seconds("300"), Ok(300));
        assert_eq!(parse_seconds("5m"), Ok(300));
        assert!(parse_seconds("soon").unwrap_err().contains("TTL"));
        assert_eq!(parse_ttl("1m-10m"), Ok((60, 600)));
        assert_eq!(parse_ttl("300"), Ok((300, 300)));
        assert!(parse_ttl("600-60").unwrap_err().contains("above"));
    }
}
