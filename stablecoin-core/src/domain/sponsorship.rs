//! Sponsorship budgets (issue #51 item 4): how much of the service's own money (EVM gas,
//! TRON Energy and Bandwidth, Solana fees and rent) one tenant's payments on one rail may
//! consume per UTC day and per UTC month, and the pure decision whether one more
//! sponsored payment fits.
//!
//! Why calendar periods (UTC day, UTC month) and not rolling windows: a budget is a
//! spending allowance staff reason about like an invoice line ("10 POL a day, 200 a
//! month"), Circle's Gas Station and Alchemy's Gas Manager reset theirs on calendar
//! boundaries too, and a calendar period needs two counters per rail, never buckets:
//! metering stays one small record update per settlement. The price is the boundary
//! burst: just before and just after midnight UTC a tenant may spend two days' caps.
//!
//! Why the estimate is the month's highest cost: admission happens before the chain says
//! what a payment costs, so it must guess. The highest cost seen on the rail this month
//! (the previous month's at a month's start) is a guess that only errs on refusing: a
//! payment is admitted only if the spend plus that estimate stays within every cap. The
//! first payment on a rail has no estimate and is admitted while the spend is below the
//! cap. Payments admitted but not yet confirmed are not counted (the spend is what
//! receipts reported), so payments in flight when the cap is reached may overshoot it by
//! at most their own costs.
//!
//! Units are the chain's own, never converted (see the rail port's `SponsorCost`):
//! `native` in wei, sun or lamports; `energy` and `bandwidth` in TRON's units.

use crate::domain::time::Timestamp;
use serde::{Deserialize, Serialize};

/// One day in milliseconds.
const DAY_MS: i64 = 86_400_000;

/// What sponsored payments consumed, or a cap on it: the chain's smallest native unit and
/// TRON's two resources.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Smallest native unit (wei, sun, lamports).
    pub native: u128,
    /// TRON Energy.
    #[serde(default)]
    pub energy: u64,
    /// TRON Bandwidth bytes.
    #[serde(default)]
    pub bandwidth: u64,
}

impl Usage {
    /// The sum, saturating (a counter never wraps to a small number).
    pub fn plus(self, o: Usage) -> Usage {
        Usage {
            native: self.native.saturating_add(o.native),
            energy: self.energy.saturating_add(o.energy),
            bandwidth: self.bandwidth.saturating_add(o.bandwidth),
        }
    }
    /// The larger of each resource.
    pub fn max(self, o: Usage) -> Usage {
        Usage {
            native: self.native.max(o.native),
            energy: self.energy.max(o.energy),
            bandwidth: self.bandwidth.max(o.bandwidth),
        }
    }
}

/// Optional caps of one period; `None` leaves a resource uncapped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Caps {
    /// Cap on the smallest native unit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub native: Option<u128>,
    /// Cap on TRON Energy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy: Option<u64>,
    /// Cap on TRON Bandwidth.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bandwidth: Option<u64>,
}

impl Caps {
    /// Whether no resource is capped.
    pub fn is_empty(&self) -> bool {
        self.native.is_none() && self.energy.is_none() && self.bandwidth.is_none()
    }
}

/// A budget's caps: per UTC day and per UTC month.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BudgetCaps {
    /// Per UTC calendar day.
    #[serde(default)]
    pub daily: Caps,
    /// Per UTC calendar month.
    #[serde(default)]
    pub monthly: Caps,
}

/// A budget period.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Period {
    /// The UTC calendar day.
    Day,
    /// The UTC calendar month.
    Month,
}

impl Period {
    /// `day` or `month`.
    pub fn name(self) -> &'static str {
        match self {
            Period::Day => "day",
            Period::Month => "month",
        }
    }
}

/// The UTC day `at` falls in: days since the Unix epoch.
pub fn day_index(at: Timestamp) -> i64 {
    at.millis().div_euclid(DAY_MS)
}

/// The UTC month `at` falls in: `year * 12 + month - 1`.
pub fn month_index(at: Timestamp) -> i64 {
    let (y, m, _) = civil_from_days(day_index(at));
    y * 12 + (m as i64 - 1)
}

/// When the period containing `at` ends (the next one starts), UTC.
pub fn period_end(period: Period, at: Timestamp) -> Timestamp {
    match period {
        Period::Day => Timestamp((day_index(at) + 1) * DAY_MS),
        Period::Month => {
            let (y, m, _) = civil_from_days(day_index(at));
            let (ny, nm) = if m == 12 { (y + 1, 1) } else { (y, m + 1) };
            Timestamp(days_from_civil(ny, nm, 1) * DAY_MS)
        }
    }
}

/// (year, month 1..=12, day 1..=31) of a day count since 1970-01-01 (proleptic
/// Gregorian; Howard Hinnant's algorithm, exact for every i64 day this service meets).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// Days since 1970-01-01 of a civil date (inverse of [`civil_from_days`]).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = m as i64;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// What a tenant's sponsored payments on one rail consumed in the current periods.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Spend {
    /// The UTC day [`Spend::day`] counts ([`day_index`]).
    pub day_index: i64,
    /// Consumed on that day.
    pub day: Usage,
    /// The UTC month [`Spend::month`] counts ([`month_index`]).
    pub month_index: i64,
    /// Consumed in that month.
    pub month: Usage,
    /// The highest single cost in that month: the estimate of the next payment.
    #[serde(default)]
    pub month_max: Usage,
    /// The highest single cost of the month before, the estimate at a month's start.
    #[serde(default)]
    pub previous_month_max: Usage,
    /// Payments metered, ever (for the dashboard and the metrics' sanity).
    #[serde(default)]
    pub payments: u64,
}

impl Spend {
    /// The spend as of `now`: a period that has ended counts zero.
    pub fn at(&self, now: Timestamp) -> Spend {
        let mut s = *self;
        let (d, m) = (day_index(now), month_index(now));
        if s.day_index != d {
            s.day_index = d;
            s.day = Usage::default();
        }
        if s.month_index != m {
            s.previous_month_max = if s.month_index == m - 1 {
                s.month_max
            } else {
                Usage::default()
            };
            s.month_index = m;
            s.month = Usage::default();
            s.month_max = Usage::default();
        }
        s
    }

    /// Adds one confirmed payment's `cost`, at `now`.
    pub fn record(&mut self, now: Timestamp, cost: Usage) {
        *self = self.at(now);
        self.day = self.day.plus(cost);
        self.month = self.month.plus(cost);
        self.month_max = self.month_max.max(cost);
        self.payments = self.payments.saturating_add(1);
    }

    /// The cost the next payment is expected to have (see the module's doc).
    pub fn estimate(&self, now: Timestamp) -> Usage {
        let s = self.at(now);
        s.month_max.max(s.previous_month_max)
    }

    /// What was consumed in `period` as of `now`.
    pub fn of(&self, period: Period, now: Timestamp) -> Usage {
        let s = self.at(now);
        match period {
            Period::Day => s.day,
            Period::Month => s.month,
        }
    }
}

/// Why a payment does not fit a budget: the first cap it meets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Exceeded {
    /// The period whose cap is met.
    pub period: Period,
    /// `native`, `energy` or `bandwidth`.
    pub resource: &'static str,
    /// The cap.
    pub cap: u128,
    /// Consumed in the period so far.
    pub spent: u128,
    /// What the next payment is expected to cost of that resource.
    pub estimate: u128,
    /// When the period ends and the spend starts over.
    pub resets_at: Timestamp,
}

/// Whether one more sponsored payment fits `caps`, given `spend`, at `now`: refused when a
/// capped resource's spend has reached its cap, or would pass it by the estimate. Days
/// are checked before months (the shorter reset first).
pub fn check(caps: &BudgetCaps, spend: &Spend, now: Timestamp) -> Result<(), Exceeded> {
    let s = spend.at(now);
    let est = s.estimate(now);
    for (period, c, used) in [
        (Period::Day, caps.daily, s.day),
        (Period::Month, caps.monthly, s.month),
    ] {
        let lines: [(&'static str, Option<u128>, u128, u128); 3] = [
            ("native", c.native, used.native, est.native),
            (
                "energy",
                c.energy.map(u128::from),
                used.energy.into(),
                est.energy.into(),
            ),
            (
                "bandwidth",
                c.bandwidth.map(u128::from),
                used.bandwidth.into(),
                est.bandwidth.into(),
            ),
        ];
        for (resource, cap, spent, estimate) in lines {
            let Some(cap) = cap else { continue };
            if spent >= cap || spent.saturating_add(estimate) > cap {
                return Err(Exceeded {
                    period,
                    resource,
                    cap,
                    spent,
                    estimate,
                    resets_at: period_end(period, now),
                });
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// 2026-11-29T12:00:00Z.
    const NOON: Timestamp = Timestamp(1_795_953_600_000);

    fn native(n: u128) -> Usage {
        Usage {
            native: n,
            ..Default::default()
        }
    }

    fn daily_native(cap: u128) -> BudgetCaps {
        BudgetCaps {
            daily: Caps {
                native: Some(cap),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    #[test]
    fn calendar_periods_are_utc() {
        assert_eq!(NOON.to_rfc3339(), "2026-11-29T12:00:00Z");
        assert_eq!(
            period_end(Period::Day, NOON).to_rfc3339(),
            "2026-11-30T00:00:00Z"
        );
        assert_eq!(
            period_end(Period::Month, NOON).to_rfc3339(),
            "2026-12-01T00:00:00Z"
        );
        let dec = Timestamp::parse_rfc3339("2026-12-31T23:59:59Z").unwrap();
        assert_eq!(
            period_end(Period::Month, dec).to_rfc3339(),
            "2027-01-01T00:00:00Z"
        );
        assert_eq!(
            month_index(dec) + 1,
            month_index(period_end(Period::Month, dec))
        );
        let leap = Timestamp::parse_rfc3339("2028-02-29T10:00:00Z").unwrap();
        assert_eq!(
            period_end(Period::Month, leap).to_rfc3339(),
            "2028-03-01T00:00:00Z"
        );
    }

    #[test]
    fn a_new_day_starts_the_daily_spend_over_but_not_the_month() {
        let mut s = Spend::default();
        s.record(NOON, native(7));
        s.record(NOON, native(5));
        assert_eq!(s.of(Period::Day, NOON), native(12));
        let tomorrow = period_end(Period::Day, NOON);
        assert_eq!(s.of(Period::Day, tomorrow), Usage::default());
        assert_eq!(s.of(Period::Month, tomorrow), native(12));
        let next_month = period_end(Period::Month, NOON);
        assert_eq!(s.of(Period::Month, next_month), Usage::default());
        // The month before's highest cost is the estimate at a month's start.
        assert_eq!(s.estimate(next_month), native(7));
        assert_eq!(s.payments, 2);
    }

    #[test]
    fn refused_when_the_estimate_would_pass_the_cap_and_allowed_again_the_next_day() {
        let caps = daily_native(30);
        let mut s = Spend::default();
        for _ in 0..3 {
            assert!(check(&caps, &s, NOON).is_ok());
            s.record(NOON, native(10));
        }
        let e = check(&caps, &s, NOON).unwrap_err();
        assert_eq!(
            (e.period, e.resource, e.cap, e.spent),
            (Period::Day, "native", 30, 30)
        );
        assert_eq!(e.resets_at, period_end(Period::Day, NOON));
        assert!(check(&caps, &s, e.resets_at).is_ok());
        // Spend 25 of 30 with an estimate of 10: refused, it would pass the cap.
        let mut s = Spend::default();
        s.record(NOON, native(10));
        s.record(NOON, native(10));
        s.record(NOON, native(5));
        assert_eq!(check(&caps, &s, NOON).unwrap_err().estimate, 10);
    }

    #[test]
    fn tron_resources_are_capped_on_their_own() {
        let caps = BudgetCaps {
            monthly: Caps {
                energy: Some(100_000),
                ..Default::default()
            },
            ..Default::default()
        };
        let mut s = Spend::default();
        let cost = Usage {
            native: 0,
            energy: 65_000,
            bandwidth: 345,
        };
        assert!(check(&caps, &s, NOON).is_ok());
        s.record(NOON, cost);
        let e = check(&caps, &s, NOON).unwrap_err();
        assert_eq!((e.period, e.resource), (Period::Month, "energy"));
    }

    #[test]
    fn no_caps_never_refuse() {
        let mut s = Spend::default();
        s.record(NOON, native(u128::MAX));
        s.record(NOON, native(u128::MAX));
        assert_eq!(s.day.native, u128::MAX);
        assert!(check(&BudgetCaps::default(), &s, NOON).is_ok());
    }

    proptest! {
        /// Payments admitted one after the other (each confirmed before the next asks)
        /// never take the spend past a cap by more than one payment's cost, and never
        /// at all once every cost is at most one seen before.
        #[test]
        fn sequential_admissions_stay_within_the_cap(
            cap in 1u128..10_000,
            costs in proptest::collection::vec(0u128..500, 1..80),
            step_ms in 0i64..3_600_000,
        ) {
            let caps = daily_native(cap);
            let mut s = Spend::default();
            let mut now = NOON;
            let mut highest = 0u128;
            for c in costs {
                if check(&caps, &s, now).is_ok() {
                    let fits_estimate = c <= highest;
                    s.record(now, native(c));
                    highest = highest.max(c);
                    let spent = s.of(Period::Day, now).native;
                    prop_assert!(spent <= cap + c);
                    if fits_estimate {
                        prop_assert!(spent <= cap);
                    }
                }
                now = now.plus_millis(step_ms);
                if day_index(now) != day_index(NOON) {
                    break;
                }
            }
        }

        /// The same inputs always give the same decision, and the calendar math agrees
        /// with the `time` crate.
        #[test]
        fn decisions_are_deterministic_and_periods_exact(ms in 0i64..4_102_444_800_000) {
            let at = Timestamp(ms);
            let caps = daily_native(5);
            let mut s = Spend::default();
            s.record(at, native(3));
            prop_assert_eq!(check(&caps, &s, at), check(&caps, &s, at));
            let t = time::OffsetDateTime::from_unix_timestamp(at.unix_secs()).unwrap();
            prop_assert_eq!(
                month_index(at),
                i64::from(t.year()) * 12 + i64::from(u8::from(t.month())) - 1
            );
            let end = period_end(Period::Month, at);
            prop_assert!(end > at);
            prop_assert_eq!(month_index(end), month_index(at) + 1);
            prop_assert_eq!(month_index(end.plus_millis(-1)), month_index(at));
        }
    }
}
