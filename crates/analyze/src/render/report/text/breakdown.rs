//! The breakdowns: one table per way of grouping the window's requests, shown when it has
//! more than one group.

use std::fmt::Write as _;

use crate::summary::Summary;
use crate::units::{count, duration_ns, percent, rate};

use super::rows::or_na;

/// The tables, each titled by what it groups by.
pub(super) fn render_breakdowns(out: &mut String, s: &Summary) {
    for b in s.breakdowns.iter().filter(|b| b.is_telling()) {
        let title = match b.by.as_str() {
            "host" => "By host",
            "class" => "By class",
            "set" => "By set",
            "pass" => "By pass",
            "status" => "By status",
            "cache" => "By cache",
            "size" => "By size",
            other => other,
        };
        let hits = b.groups.iter().any(|g| g.hit_ratio.is_some());
        let phases = b.groups.iter().any(|g| g.first_byte.is_some());
        let mut header: Vec<String> = [
            format!("{title:<14}group"),
            "requests".into(),
            "share".into(),
            "rate".into(),
            "errors".into(),
            "status".into(),
        ]
        .into();
        if hits {
            header.push("hit".into());
        }
        header.extend(["p50", "p99", "max"].map(str::to_owned));
        if phases {
            header.extend(["first byte p50", "transfer p50"].map(str::to_owned));
        }
        let mut rows = vec![header];
        for g in &b.groups {
            let ns = |v: Option<u64>| or_na(v.map(|v| duration_ns(v as f64)));
            let mut cells = vec![
                format!("{:14}{}", "", g.name),
                count(g.requests),
                percent(g.share),
                rate(g.per_second),
                count(g.errors),
                if g.statuses.is_empty() {
                    "-".into()
                } else {
                    g.statuses.clone()
                },
            ];
            if hits {
                cells.push(or_na(g.hit_ratio.map(percent)));
            }
            cells.extend([
                ns(g.latency.quantile("p50")),
                ns(g.latency.quantile("p99")),
                ns(g.latency.max_ns),
            ]);
            if phases {
                let p50 = |l: &Option<crate::latency::LatencySummary>| {
                    ns(l.as_ref().and_then(|l| l.quantile("p50")))
                };
                cells.extend([p50(&g.first_byte), p50(&g.transfer)]);
            }
            rows.push(cells);
        }
        out.push_str(&crate::render::table::layout(&rows));
        if b.folded > 0 {
            let _ = writeln!(
                out,
                "{:14}(other) holds {} more names, beyond the {} a breakdown keeps",
                "",
                count(b.folded),
                vload_schema::GROUP_LIMIT
            );
        }
    }
}
