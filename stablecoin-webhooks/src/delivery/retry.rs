//! The retry schedule as one pure function: given which attempt just ended and how, is
//! the delivery delivered, retried after how long, or dead? No clock and no entropy
//! port: the caller adds the delay to its clock's now and supplies the jitter draw, so
//! every boundary of the schedule is tested exhaustively and instantly.

/// Delays after attempt 1, 2, ... (ms); its length + 1 is the number of attempts.
pub const RETRY_SCHEDULE_MS: [i64; 7] = [
    5_000,
    5 * 60_000,
    30 * 60_000,
    2 * 3_600_000,
    5 * 3_600_000,
    10 * 3_600_000,
    10 * 3_600_000,
];
/// Longest `Retry-After` honoured.
pub const MAX_RETRY_AFTER_MS: i64 = 24 * 3_600_000;

/// The longest a delivery can still be retried after its first attempt: every delay of
/// the schedule at its longest, the most jitter or a receiver's `Retry-After` at
/// [`MAX_RETRY_AFTER_MS`], whichever is longer (7 days). Retention keeps webhook records
/// at least this long (see `WebhookRetention`).
pub const MAX_RETRY_SPAN_MS: i64 = {
    let mut total = 0;
    let mut i = 0;
    while i < RETRY_SCHEDULE_MS.len() {
        let base = RETRY_SCHEDULE_MS[i];
        let jittered = base + base * 999 / 10_000;
        total += if jittered > MAX_RETRY_AFTER_MS {
            jittered
        } else {
            MAX_RETRY_AFTER_MS
        };
        i += 1;
    }
    total
};

/// How an attempt ended, as far as the schedule is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Attempted {
    /// The receiver answered 2xx.
    Delivered,
    /// Anything else from a usable endpoint (non-2xx, timeout, connection error).
    Failed {
        /// The receiver's `Retry-After` in ms, see [`retry_after_ms`].
        retry_after_ms: Option<i64>,
    },
    /// The endpoint was disabled or deleted: nothing was sent, and retrying cannot help.
    EndpointUnusable,
}

/// What becomes of a delivery after an attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// Done: the receiver has it.
    Delivered,
    /// Attempt again later.
    Retry {
        /// How long after now.
        delay_ms: i64,
    },
    /// No attempt left (or no endpoint to send to): the delivery is `DEAD`.
    Dead,
}

/// The retry schedule. `attempt` is the number of attempts made, the one that just ended
/// included (1 after the first). A failed attempt `n` within the schedule is retried
/// after `RETRY_SCHEDULE_MS[n - 1]` stretched by 0-9.99 % of jitter (`jitter() % 1000`
/// per ten thousand), or after the receiver's `Retry-After` when that is longer (capped
/// at [`MAX_RETRY_AFTER_MS`]); after the last attempt it is dead. `jitter` is called only
/// when a retry is scheduled, so a delivery that ends draws no entropy. An `attempt` of 0
/// (nothing attempted) is not something the worker produces; it is answered `Dead`
/// rather than panicking.
pub fn retry(attempt: usize, attempted: Attempted, jitter: impl FnOnce() -> u16) -> Next {
    let retry_after_ms = match attempted {
        Attempted::Delivered => return Next::Delivered,
        Attempted::EndpointUnusable => return Next::Dead,
        Attempted::Failed { retry_after_ms } => retry_after_ms,
    };
    let Some(&base) = attempt
        .checked_sub(1)
        .and_then(|i| RETRY_SCHEDULE_MS.get(i))
    else {
        return Next::Dead;
    };
    let stretch = base * i64::from(jitter() % 1000) / 10_000;
    let mut delay_ms = base + stretch;
    if let Some(ra) = retry_after_ms {
        delay_ms = delay_ms.max(ra.min(MAX_RETRY_AFTER_MS));
    }
    Next::Retry { delay_ms }
}

/// The `Retry-After` a response asks for, in ms: honoured only on a 429 or 503 and only
/// as whole seconds (not an HTTP date), never negative.
pub fn retry_after_ms(status: u16, header: Option<&str>) -> Option<i64> {
    header
        .and_then(|v| v.trim().parse::<i64>().ok())
        .filter(|s| *s >= 0 && matches!(status, 429 | 503))
        .map(|s| s.saturating_mul(1000))
}

#[cfg(test)]
mod tests {
    use super::*;

    const FAILED: Attempted = Attempted::Failed {
        retry_after_ms: None,
    };

    fn no_draw() -> u16 {
        panic!("the jitter is drawn only when a retry is scheduled")
    }

    fn delay(next: Next) -> i64 {
        match next {
            Next::Retry { delay_ms } => delay_ms,
            other => panic!("expected a retry, got {other:?}"),
        }
    }

    #[test]
    fn the_schedule_is_svix_s_eight_attempts_over_about_27_and_a_half_hours() {
        let secs: Vec<i64> = RETRY_SCHEDULE_MS.iter().map(|ms| ms / 1000).collect();
        assert_eq!(secs, [5, 300, 1800, 7200, 18_000, 36_000, 36_000]);
        let total: i64 = RETRY_SCHEDULE_MS.iter().sum();
        assert_eq!(total, 27 * 3_600_000 + 35 * 60_000 + 5_000);
    }

    #[test]
    fn every_attempt_number_and_outcome() {
        let last = RETRY_SCHEDULE_MS.len() + 1;
        for attempt in 0..=last + 2 {
            assert_eq!(
                retry(attempt, Attempted::Delivered, no_draw),
                Next::Delivered,
                "a 2xx delivers, attempt {attempt}"
            );
            assert_eq!(
                retry(attempt, Attempted::EndpointUnusable, no_draw),
                Next::Dead,
                "no endpoint, attempt {attempt}"
            );
            let failed = match attempt {
                1..=7 => retry(attempt, FAILED, || 0),
                _ => retry(attempt, FAILED, no_draw),
            };
            let want = match attempt {
                0 => Next::Dead,
                n if n < last => Next::Retry {
                    delay_ms: RETRY_SCHEDULE_MS[n - 1],
                },
                _ => Next::Dead,
            };
            assert_eq!(failed, want, "failed attempt {attempt}");
        }
        // The boundary itself: attempt 7 is retried after 10 h, attempt 8 is the last.
        assert_eq!(delay(retry(7, FAILED, || 0)), 10 * 3_600_000);
        assert_eq!(retry(8, FAILED, no_draw), Next::Dead);
    }

    #[test]
    fn jitter_stretches_each_delay_by_under_ten_percent() {
        for (i, &base) in RETRY_SCHEDULE_MS.iter().enumerate() {
            let at = |draw: u16| delay(retry(i + 1, FAILED, move || draw));
            assert_eq!(at(0), base);
            assert_eq!(at(1), base + base / 10_000);
            assert_eq!(at(999), base + base * 999 / 10_000);
            assert!(at(999) < base + base / 10, "under 10 %");
            // Draws wrap at 1000: 1000 is no stretch, u16::MAX (65535) is 535.
            assert_eq!(at(1000), base);
            assert_eq!(at(u16::MAX), base + base * 535 / 10_000);
        }
        // The first delay exactly: 5 s + 999/10000 of it.
        assert_eq!(delay(retry(1, FAILED, || 999)), 5_499);
    }

    #[test]
    fn retry_after_wins_only_when_longer_and_is_capped_at_a_day() {
        let with = |ra: i64, draw: u16| {
            delay(retry(
                2,
                Attempted::Failed {
                    retry_after_ms: Some(ra),
                },
                move || draw,
            ))
        };
        let base = RETRY_SCHEDULE_MS[1];
        assert_eq!(with(0, 0), base, "shorter: the schedule wins");
        assert_eq!(with(base - 1, 0), base);
        assert_eq!(with(base, 0), base);
        assert_eq!(with(base + 1, 0), base + 1, "longer: Retry-After wins");
        let stretched = base + base * 500 / 10_000;
        assert_eq!(with(stretched - 1, 500), stretched, "jitter counts");
        assert_eq!(with(stretched + 1, 500), stretched + 1);
        assert_eq!(with(MAX_RETRY_AFTER_MS, 0), MAX_RETRY_AFTER_MS);
        assert_eq!(
            with(MAX_RETRY_AFTER_MS + 1, 0),
            MAX_RETRY_AFTER_MS,
            "capped"
        );
        assert_eq!(with(i64::MAX, 0), MAX_RETRY_AFTER_MS);
        assert_eq!(with(-5, 0), base, "a negative value changes nothing");
        // Past the last attempt, Retry-After does not bring a delivery back.
        let dead = retry(
            8,
            Attempted::Failed {
                retry_after_ms: Some(1000),
            },
            no_draw,
        );
        assert_eq!(dead, Next::Dead);
    }

    /// The span is what `retry` itself can produce at the worst: the most jitter and the
    /// longest `Retry-After` on every attempt, until the delivery is dead.
    #[test]
    fn max_retry_span_is_the_longest_run_of_retries_retry_can_schedule() {
        let longest = Attempted::Failed {
            retry_after_ms: Some(i64::MAX),
        };
        let mut span = 0;
        let mut attempt = 1;
        while let Next::Retry { delay_ms } = retry(attempt, longest, || 999) {
            span += delay_ms;
            attempt += 1;
        }
        assert_eq!(span, MAX_RETRY_SPAN_MS);
        assert_eq!(MAX_RETRY_SPAN_MS, 7 * 24 * 3_600_000);
        let plain: i64 = (1..=RETRY_SCHEDULE_MS.len())
            .map(|attempt| delay(retry(attempt, FAILED, || 999)))
            .sum();
        assert!(
            plain < MAX_RETRY_SPAN_MS,
            "the span covers the schedule's own"
        );
    }

    #[test]
    fn retry_after_is_read_from_429_and_503_only_in_whole_seconds() {
        assert_eq!(retry_after_ms(429, Some("7")), Some(7_000));
        assert_eq!(retry_after_ms(503, Some(" 0 ")), Some(0));
        assert_eq!(retry_after_ms(503, Some("-1")), None);
        assert_eq!(retry_after_ms(503, None), None);
        assert_eq!(
            retry_after_ms(429, Some("Wed, 21 Oct 2015 07:28:00 GMT")),
            None
        );
        assert_eq!(retry_after_ms(429, Some("1.5")), None);
        assert_eq!(
            retry_after_ms(429, Some(&i64::MAX.to_string())),
            Some(i64::MAX),
            "saturates instead of overflowing"
        );
        for status in [200, 408, 500, 502, 504] {
            assert_eq!(retry_after_ms(status, Some("7")), None, "status {status}");
        }
    }
}
