//! The ledger law: every part of a run file (totals, intervals, stages) keeps the same
//! requests, and each balances (due = sent + unsent; sent = ended + open).

use super::fields::invalid;
use crate::SchemaError;

/// The counts every part of a run file keeps of the same requests.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(super) struct Ledger {
    intended: u64,
    sent: u64,
    completed: u64,
    unsent: u64,
    unfinished: u64,
    bytes_in: u64,
    bytes_out: u64,
    /// `None` where a part does not keep it (stages).
    connections: Option<u64>,
    errors: std::collections::BTreeMap<crate::ErrorKind, u64>,
    classes: [u64; 5],
}

impl Ledger {
    pub(super) fn of_totals(t: &crate::Totals) -> Ledger {
        let mut classes = crate::StatusClasses::default();
        for (code, n) in &t.status_codes {
            classes.count_n(*code, *n);
        }
        Ledger {
            intended: t.intended,
            sent: t.sent,
            completed: t.completed,
            unsent: t.unsent,
            unfinished: t.unfinished,
            bytes_in: t.bytes_in,
            bytes_out: t.bytes_out,
            connections: Some(t.connections_opened),
            errors: t.errors.iter().map(|(k, e)| (*k, e.count)).collect(),
            classes: class_array(&classes),
        }
    }

    pub(super) fn of_interval(i: &crate::Interval) -> Ledger {
        Ledger {
            intended: i.intended,
            sent: i.sent,
            completed: i.completed,
            unsent: i.unsent,
            unfinished: i.unfinished,
            bytes_in: i.bytes_in,
            bytes_out: i.bytes_out,
            connections: Some(i.connections_opened),
            errors: i.errors.clone(),
            classes: class_array(&i.status_classes),
        }
    }

    pub(super) fn of_stage(s: &crate::StageRecord) -> Ledger {
        let mut classes = crate::StatusClasses::default();
        for (code, n) in &s.status_codes {
            classes.count_n(*code, *n);
        }
        Ledger {
            intended: s.intended,
            sent: s.sent,
            completed: s.completed,
            unsent: s.unsent,
            unfinished: s.unfinished,
            bytes_in: s.bytes_in,
            bytes_out: s.bytes_out,
            connections: None,
            errors: s.errors.clone(),
            classes: class_array(&classes),
        }
    }

    /// An empty sum that counts connections too.
    pub(super) fn counting_connections() -> Ledger {
        Ledger {
            connections: Some(0),
            ..Ledger::default()
        }
    }

    pub(super) fn without_connections(mut self) -> Ledger {
        self.connections = None;
        self
    }

    pub(super) fn add(mut self, other: &Ledger) -> Ledger {
        let sum = |a: &mut u64, b: u64| *a = a.saturating_add(b);
        sum(&mut self.intended, other.intended);
        sum(&mut self.sent, other.sent);
        sum(&mut self.completed, other.completed);
        sum(&mut self.unsent, other.unsent);
        sum(&mut self.unfinished, other.unfinished);
        sum(&mut self.bytes_in, other.bytes_in);
        sum(&mut self.bytes_out, other.bytes_out);
        self.connections = match (self.connections, other.connections) {
            (Some(a), Some(b)) => Some(a.saturating_add(b)),
            _ => None,
        };
        for (kind, n) in &other.errors {
            sum(self.errors.entry(*kind).or_default(), *n);
        }
        for (a, b) in self.classes.iter_mut().zip(other.classes) {
            sum(a, b);
        }
        self
    }

    /// Fails naming the first count of `parts` (the intervals or the stages) that does not
    /// add up to the same count of the totals.
    pub(super) fn agrees(&self, parts: &str, sum: &Ledger) -> Result<(), SchemaError> {
        let pairs = [
            ("intended", self.intended, sum.intended),
            ("sent", self.sent, sum.sent),
            ("completed", self.completed, sum.completed),
            ("unsent", self.unsent, sum.unsent),
            ("unfinished", self.unfinished, sum.unfinished),
            ("bytes_in", self.bytes_in, sum.bytes_in),
            ("bytes_out", self.bytes_out, sum.bytes_out),
        ];
        for (name, whole, parts_sum) in pairs {
            if whole != parts_sum {
                return Err(invalid(
                    format!("{parts}[].{name}"),
                    format!("they sum to {parts_sum}, but totals.{name} is {whole}"),
                ));
            }
        }
        if let (Some(whole), Some(parts_sum)) = (self.connections, sum.connections)
            && whole != parts_sum
        {
            return Err(invalid(
                format!("{parts}[].connections_opened"),
                format!("they sum to {parts_sum}, but totals.connections_opened is {whole}"),
            ));
        }
        let kinds = self.errors.keys().chain(sum.errors.keys());
        for kind in kinds {
            let (a, b) = (
                self.errors.get(kind).copied().unwrap_or(0),
                sum.errors.get(kind).copied().unwrap_or(0),
            );
            if a != b {
                return Err(invalid(
                    format!("{parts}[].errors.{}", kind.as_str()),
                    format!("they sum to {b}, but the totals count {a}"),
                ));
            }
        }
        if self.classes != sum.classes {
            return Err(invalid(
                format!("{parts}[].status"),
                format!(
                    "responses by class (1xx..5xx) sum to {:?}, but the totals' status codes give {:?}",
                    sum.classes, self.classes
                ),
            ));
        }
        Ok(())
    }
}

fn class_array(c: &crate::StatusClasses) -> [u64; 5] {
    [c.s1xx, c.s2xx, c.s3xx, c.s4xx, c.s5xx]
}
