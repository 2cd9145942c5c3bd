//! The store: one SQLite file holding every run file added (deflated) and, beside it, what
//! history needs without reading one: the series key, the commit, the gate's verdict and the
//! tracked metrics. Adding is idempotent by run id; concurrent adders (the shards of one
//! attack) wait for each other (WAL journal, a busy timeout).

use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension as _, params};
use vload_analyze::Metric;
use vload_schema::{Mode, RunFile};

use crate::key::{self, SeriesKey};

/// The database file when neither `--db` nor `VLOAD_HISTORY` names one.
pub const DEFAULT_DB: &str = "vload-history.db";

/// The layout version kept in SQLite's `user_version`.
const LAYOUT: i64 = 1;

/// How long a writer waits for another (concurrent adders).
const BUSY: Duration = Duration::from_secs(30);

/// Reads the layout version and, for a database this vload can read, makes sure it is in
/// WAL mode and has its tables; returns the version found.
fn prepare(conn: &Connection) -> Result<i64, rusqlite::Error> {
    let found: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if found > LAYOUT {
        return Ok(found);
    }
    let mode: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        conn.pragma_update(None, "journal_mode", "WAL")?;
    }
    if found < LAYOUT {
        conn.execute_batch(
            "BEGIN IMMEDIATE;
             CREATE TABLE IF NOT EXISTS series (
               key TEXT PRIMARY KEY, label TEXT NOT NULL, workload TEXT NOT NULL,
               testbed TEXT NOT NULL, config TEXT NOT NULL);
             CREATE TABLE IF NOT EXISTS runs (
               run_id TEXT PRIMARY KEY, series TEXT NOT NULL REFERENCES series(key),
               started_at TEXT NOT NULL, commit_id TEXT NOT NULL, branch TEXT,
               mode TEXT NOT NULL, excluded TEXT, added_from TEXT NOT NULL, file BLOB NOT NULL);
             CREATE INDEX IF NOT EXISTS runs_by_series ON runs(series, started_at);
             CREATE TABLE IF NOT EXISTS metrics (
               run_id TEXT NOT NULL REFERENCES runs(run_id), metric TEXT NOT NULL,
               value REAL NOT NULL, PRIMARY KEY (run_id, metric)) WITHOUT ROWID;
             PRAGMA user_version = 1;
             COMMIT;",
        )?;
    }
    Ok(found)
}

/// SQLite's "busy" and "locked": another connection holds the lock.
fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

/// What can go wrong with the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// SQLite refused: the file is not a database, is locked too long, or the disk is full.
    #[error("{path}: {source}")]
    Sqlite {
        /// The database.
        path: String,
        /// SQLite's error.
        source: rusqlite::Error,
    },
    /// The database was written by a newer vload.
    #[error(
        "{path}: written by a newer vload (layout {found}, this one reads up to {LAYOUT}): use that vload"
    )]
    Newer {
        /// The database.
        path: String,
        /// Its layout version.
        found: i64,
    },
    /// A run file that cannot be read at all.
    #[error("{0}")]
    Run(#[from] vload_schema::SchemaError),
}

/// A run as history sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredRun {
    /// The run's id.
    pub run_id: String,
    /// Its series' key.
    pub series: String,
    /// When it started (RFC 3339, sorts as time).
    pub started_at: String,
    /// The commit it measured, or `run <id>` when it named none (each such run its own point).
    pub commit: String,
    /// Its branch, if known.
    pub branch: Option<String>,
    /// Why it stays out of the statistics, `None` when it is in.
    pub excluded: Option<String>,
    /// Its load model.
    pub mode: Mode,
    /// Its tracked metrics.
    pub metrics: Vec<(Metric, f64)>,
}

impl StoredRun {
    /// The value of one metric, if the run has it.
    pub fn value(&self, metric: Metric) -> Option<f64> {
        self.metrics
            .iter()
            .find(|(m, _)| *m == metric)
            .map(|(_, v)| *v)
    }
}

/// A series as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeriesInfo {
    /// Its key, label, workload, testbed and server configuration.
    pub key: SeriesKey,
}

/// What adding a run did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Added {
    /// Stored now, in this series, excluded for this reason or not.
    New {
        /// The run's id.
        run_id: String,
        /// Its series' key.
        series: String,
        /// Why it is kept out of the statistics.
        excluded: Option<String>,
    },
    /// A run with this id was stored before: nothing changed.
    Already {
        /// The run's id.
        run_id: String,
    },
}

/// An open history database.
pub struct Store {
    conn: Connection,
    path: PathBuf,
}

impl Store {
    /// Opens (creating when absent) the database at `path`.
    ///
    /// # Errors
    /// When SQLite cannot open or create it, or it is a newer layout.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        let name = path.display().to_string();
        let sql = |source| StoreError::Sqlite {
            path: name.clone(),
            source,
        };
        let conn = Connection::open(path).map_err(sql)?;
        conn.busy_timeout(BUSY).map_err(sql)?;
        // Switching a new file to WAL takes a lock that SQLite does not wait for: adders that
        // create the database together (the shards of one attack) retry until the busy
        // timeout, as every later statement waits.
        let started = std::time::Instant::now();
        loop {
            match prepare(&conn) {
                Ok(found) if found > LAYOUT => return Err(StoreError::Newer { path: name, found }),
                Ok(_) => break,
                Err(e) if is_busy(&e) && started.elapsed() < BUSY => {
                    // A transaction begun before the lock was refused ends here (an error
                    // when none was begun, which is nothing to undo).
                    let _ = conn.execute_batch("ROLLBACK");
                    std::thread::sleep(Duration::from_millis(10));
                }
                Err(e) => return Err(sql(e)),
            }
        }
        Ok(Store {
            conn,
            path: path.to_owned(),
        })
    }

    fn sql(&self, source: rusqlite::Error) -> StoreError {
        StoreError::Sqlite {
            path: self.path.display().to_string(),
            source,
        }
    }

    /// Adds one run file's text, read from `from` (kept for `show`): idempotent by run id.
    /// A file whose ledger does not add up is kept, excluded, rather than lost.
    ///
    /// # Errors
    /// When the text is not a run file vload can read, or SQLite fails.
    pub fn add(&mut self, text: &str, from: &str) -> Result<Added, StoreError> {
        let run = RunFile::from_json_unchecked(text)?;
        let run_id = run.run_id.clone();
        let known: Option<i64> = self
            .conn
            .query_row("SELECT 1 FROM runs WHERE run_id = ?1", [&run_id], |r| {
                r.get(0)
            })
            .optional()
            .map_err(|e| self.sql(e))?;
        if known.is_some() {
            return Ok(Added::Already { run_id });
        }
        let key = SeriesKey::of(&run);
        let excluded = key::exclusion(&run);
        let metrics = key::metrics(&run);
        let file = deflate(text.as_bytes());
        let path = self.path.display().to_string();
        let sql = |source| StoreError::Sqlite {
            path: path.clone(),
            source,
        };
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(sql)?;
        let result = (|| {
            tx.execute(
                "INSERT OR IGNORE INTO series (key, label, workload, testbed, config) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![key.key, key.label, key.workload, key.testbed, key.config],
            )?;
            let inserted = tx.execute(
                "INSERT OR IGNORE INTO runs (run_id, series, started_at, commit_id, branch, mode, excluded, added_from, file)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                params![
                    run_id,
                    key.key,
                    run.started_at,
                    commit_of(&run),
                    run.provenance.as_ref().and_then(|p| p.branch.clone()),
                    mode_name(run.plan.mode),
                    excluded,
                    from,
                    file
                ],
            )?;
            if inserted == 1 {
                let mut insert =
                    tx.prepare("INSERT INTO metrics (run_id, metric, value) VALUES (?1, ?2, ?3)")?;
                for (metric, value) in &metrics {
                    insert.execute(params![run_id, key::metric_key(*metric), value])?;
                }
            }
            Ok::<usize, rusqlite::Error>(inserted)
        })();
        let inserted = result.map_err(sql)?;
        tx.commit().map_err(sql)?;
        Ok(if inserted == 1 {
            Added::New {
                run_id,
                series: key.key,
                excluded,
            }
        } else {
            // Another adder stored it between our look and our insert.
            Added::Already { run_id }
        })
    }

    /// Removes runs, and the series left without any: every run of `series` (a key, or the
    /// series keys given), the runs named in `runs`, and every run that started before
    /// `before` (RFC 3339, compared as the runs' own start times are written). One
    /// transaction: all of it, or nothing. Returns the runs and the series removed.
    ///
    /// # Errors
    /// When SQLite fails.
    pub fn forget(
        &mut self,
        series: &[String],
        runs: &[String],
        before: Option<&str>,
    ) -> Result<(u64, u64), StoreError> {
        let path = self.path.display().to_string();
        let err = |source| StoreError::Sqlite {
            path: path.clone(),
            source,
        };
        let tx = self.conn.transaction().map_err(err)?;
        let drop_runs = |sql: &str, arg: &str| -> Result<u64, rusqlite::Error> {
            let ids: Vec<String> = tx
                .prepare(sql)?
                .query_map([arg], |r| r.get(0))?
                .collect::<Result<_, _>>()?;
            for id in &ids {
                tx.execute("DELETE FROM metrics WHERE run_id = ?1", [id])?;
                tx.execute("DELETE FROM runs WHERE run_id = ?1", [id])?;
            }
            Ok(ids.len() as u64)
        };
        let mut gone = 0u64;
        for key in series {
            gone += drop_runs("SELECT run_id FROM runs WHERE series = ?1", key).map_err(err)?;
        }
        for id in runs {
            gone += drop_runs("SELECT run_id FROM runs WHERE run_id = ?1", id).map_err(err)?;
        }
        if let Some(before) = before {
            gone +=
                drop_runs("SELECT run_id FROM runs WHERE started_at < ?1", before).map_err(err)?;
        }
        let emptied = tx
            .execute(
                "DELETE FROM series WHERE key NOT IN (SELECT DISTINCT series FROM runs)",
                [],
            )
            .map_err(err)? as u64;
        tx.commit().map_err(err)?;
        Ok((gone, emptied))
    }

    /// Every series, ordered by key.
    ///
    /// # Errors
    /// When SQLite fails.
    pub fn series(&self) -> Result<Vec<SeriesInfo>, StoreError> {
        let mut stmt = self
            .conn
            .prepare("SELECT key, label, workload, testbed, config FROM series ORDER BY key")
            .map_err(|e| self.sql(e))?;
        let rows = stmt
            .query_map([], |r| {
                Ok(SeriesInfo {
                    key: SeriesKey {
                        key: r.get(0)?,
                        label: r.get(1)?,
                        workload: r.get(2)?,
                        testbed: r.get(3)?,
                        config: r.get(4)?,
                    },
                })
            })
            .and_then(Iterator::collect)
            .map_err(|e| self.sql(e))?;
        Ok(rows)
    }

    /// The runs of one series, oldest first, with their metrics.
    ///
    /// # Errors
    /// When SQLite fails.
    pub fn runs(&self, series: &str) -> Result<Vec<StoredRun>, StoreError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT r.run_id, r.started_at, r.commit_id, r.branch, r.mode, r.excluded, m.metric, m.value
                 FROM runs r LEFT JOIN metrics m ON m.run_id = r.run_id
                 WHERE r.series = ?1 ORDER BY r.started_at, r.run_id",
            )
            .map_err(|e| self.sql(e))?;
        let mut runs: Vec<StoredRun> = Vec::new();
        let mut rows = stmt.query([series]).map_err(|e| self.sql(e))?;
        while let Some(row) = rows.next().map_err(|e| self.sql(e))? {
            let get = |i| row.get::<_, Option<String>>(i);
            let run_id: String = row.get(0).map_err(|e| self.sql(e))?;
            if runs.last().is_none_or(|r| r.run_id != run_id) {
                let text = |i| get(i).map_err(|e| self.sql(e));
                runs.push(StoredRun {
                    run_id,
                    series: series.to_owned(),
                    started_at: text(1)?.unwrap_or_default(),
                    commit: text(2)?.unwrap_or_default(),
                    branch: text(3)?,
                    mode: if text(4)?.as_deref() == Some("closed") {
                        Mode::Closed
                    } else {
                        Mode::Open
                    },
                    excluded: text(5)?,
                    metrics: Vec::new(),
                });
            }
            let metric: Option<String> = row.get(6).map_err(|e| self.sql(e))?;
            let value: Option<f64> = row.get(7).map_err(|e| self.sql(e))?;
            if let (Some(metric), Some(value)) =
                (metric.as_deref().and_then(key::metric_named), value)
            {
                runs.last_mut()
                    .expect("pushed above")
                    .metrics
                    .push((metric, value));
            }
        }
        Ok(runs)
    }

    /// The stored run file of `run_id`.
    ///
    /// # Errors
    /// When SQLite fails; `Ok(None)` when no such run is stored.
    pub fn file(&self, run_id: &str) -> Result<Option<String>, StoreError> {
        let blob: Option<Vec<u8>> = self
            .conn
            .query_row("SELECT file FROM runs WHERE run_id = ?1", [run_id], |r| {
                r.get(0)
            })
            .optional()
            .map_err(|e| self.sql(e))?;
        Ok(blob.map(|b| inflate(&b)))
    }

    /// Stored runs and the database's size in bytes (pages in use).
    ///
    /// # Errors
    /// When SQLite fails.
    pub fn size(&self) -> Result<(u64, u64), StoreError> {
        let runs: i64 = self
            .conn
            .query_row("SELECT count(*) FROM runs", [], |r| r.get(0))
            .map_err(|e| self.sql(e))?;
        let bytes: i64 = self
            .conn
            .query_row(
                "SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()",
                [],
                |r| r.get(0),
            )
            .map_err(|e| self.sql(e))?;
        Ok((runs as u64, bytes as u64))
    }
}

/// The commit a run names, or `run <id>` when it names none.
fn commit_of(run: &RunFile) -> String {
    run.provenance
        .as_ref()
        .and_then(|p| p.commit.clone())
        .unwrap_or_else(|| format!("run {}", run.run_id))
}

fn mode_name(mode: Mode) -> &'static str {
    match mode {
        Mode::Open => "open",
        Mode::Closed => "closed",
    }
}

fn deflate(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(bytes).expect("writing to memory");
    encoder.finish().expect("writing to memory")
}

fn inflate(bytes: &[u8]) -> String {
    let mut text = String::new();
    // A blob this store wrote; one that does not inflate yields what it could.
    let _ = flate2::read::DeflateDecoder::new(bytes).read_to_string(&mut text);
    text
}
