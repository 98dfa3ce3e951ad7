//! The server's shared rate-limit state (`rate_limits`, migration 0008): one GCRA step
//! per request in one statement, on the database's clock.
//!
//! The store computes the step's new state and says whether it was allowed; what the
//! caller tells the client (remaining, reset, retry-after) it derives from that state
//! with its own GCRA function, the one its in-process limiter uses too.

use super::PgStore;
use crate::error::Error;

/// One GCRA step as the database took it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateLimitStep {
    /// The request fit the budget (and was counted).
    pub allowed: bool,
    /// The theoretical arrival time after the step, in microseconds on the database's
    /// clock: advanced by one interval when allowed, unchanged when refused.
    pub tat_us: i64,
    /// The database's clock when the step ran, in microseconds since the Unix epoch.
    pub now_us: i64,
}

/// The GCRA step: with `now` the database's clock and `tat` the stored arrival time (or
/// `now` when absent or past), a request fits when `tat - now <= tolerance`; then `tat`
/// becomes `tat + interval`. A refused request leaves `tat` as it was.
const STEP: &str = "
INSERT INTO rate_limits AS r (key, class, tat_us, seen_us, allowed)
SELECT $1, $2, n.now_us + $3, n.now_us, TRUE
  FROM (SELECT (EXTRACT(EPOCH FROM clock_timestamp()) * 1000000)::BIGINT AS now_us) n
ON CONFLICT (key, class) DO UPDATE SET
    allowed = GREATEST(r.tat_us, EXCLUDED.seen_us) - EXCLUDED.seen_us <= $4,
    tat_us = CASE
        WHEN GREATEST(r.tat_us, EXCLUDED.seen_us) - EXCLUDED.seen_us <= $4
        THEN GREATEST(r.tat_us, EXCLUDED.seen_us) + $3
        ELSE r.tat_us
    END,
    seen_us = EXCLUDED.seen_us
RETURNING allowed, tat_us, seen_us";

impl PgStore {
    /// Counts one request of `key` in budget `class` (GCRA: `interval_us` between two
    /// requests at the sustained rate, a burst of `tolerance_us / interval_us + 1`):
    /// one statement in autocommit (through a transaction pooler, in a transaction of
    /// its own committed at once), so the row is locked for that statement only, and
    /// concurrent requests of one key on any node queue on it and each sees the state
    /// the previous one left.
    pub async fn rate_limit(
        &self,
        key: &str,
        class: &str,
        interval_us: i64,
        tolerance_us: i64,
    ) -> Result<RateLimitStep, Error> {
        let mut conn = self.write_conn().await?;
        let (allowed, tat_us, now_us): (bool, i64, i64) = sqlx::query_as(STEP)
            .bind(key)
            .bind(class)
            .bind(interval_us)
            .bind(tolerance_us)
            .fetch_one(conn.conn())
            .await?;
        conn.done().await?;
        Ok(RateLimitStep {
            allowed,
            tat_us,
            now_us,
        })
    }

    /// Deletes at most `limit` rows whose budget is whole again (their arrival time has
    /// passed, which is the same as no row); how many went. A row a concurrent request
    /// moved forward meanwhile is kept (the delete re-checks it).
    pub async fn purge_rate_limits(&self, limit: i64) -> Result<u64, Error> {
        let done = sqlx::query(
            "DELETE FROM rate_limits WHERE ctid IN (
                 SELECT ctid FROM rate_limits
                  WHERE tat_us < (EXTRACT(EPOCH FROM clock_timestamp()) * 1000000)::BIGINT
                  LIMIT $1)
               AND tat_us < (EXTRACT(EPOCH FROM clock_timestamp()) * 1000000)::BIGINT",
        )
        .bind(limit);
        let mut conn = self.write_conn().await?;
        let done = done.execute(conn.conn()).await?;
        conn.done().await?;
        Ok(done.rows_affected())
    }
}
