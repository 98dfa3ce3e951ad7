//! Limits on what the service pays for: the smallest send per rail, and the number of
//! rent-paying wallet preparations a tenant may ask for.
//!
//! Why: every send is sponsored (gas, Energy and Bandwidth, Solana's fee) and a Solana
//! provisioning pays non-reclaimable rent for two token accounts. Without a floor, a
//! tenant (or a stolen API key) can burn the service's gas and SOL on dust transfers and
//! on provisioning made-up phone numbers. The floor and the quota are policy, so they
//! are configurable; the engine applies them, so an embedder gets the same protection
//! as the reference server.
//!
//! Pure: the engine reads the quota record, asks [`TenantQuota::count`], and commits the
//! record with a version check, so concurrent requests are each counted once.

use crate::domain::RuleError;
use crate::domain::chain::RailId;
use crate::domain::ids::TenantId;
use crate::domain::money::Micros;
use crate::domain::otp::Window;
use crate::domain::time::Timestamp;
use serde::{Deserialize, Serialize};

/// The smallest amount, in micro-units, a send may move on each rail family. The
/// default is zero everywhere (no floor) so an embedder opts in; the reference server
/// sets floors by default (see its configuration reference).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MinSend {
    /// Floor of a send on any EVM chain (gas sponsored through the paymaster).
    pub evm_micros: u64,
    /// Floor of a send on TRON (activation, Energy and Bandwidth sponsored).
    pub tron_micros: u64,
    /// Floor of a send on Solana (fee and, for a new recipient, rent sponsored).
    pub solana_micros: u64,
}

impl MinSend {
    /// The floor on `rail`.
    pub fn floor(&self, rail: RailId) -> Micros {
        Micros(match rail {
            RailId::Evm(_) => self.evm_micros,
            RailId::Tron => self.tron_micros,
            RailId::Solana => self.solana_micros,
        })
    }

    /// `Err(AmountTooSmall)` when `amount` is below the floor of `rail`.
    pub fn check(&self, rail: RailId, amount: Micros) -> Result<(), RuleError> {
        let minimum = self.floor(rail);
        if amount < minimum {
            return Err(RuleError::AmountTooSmall {
                rail: rail.name(),
                minimum,
            });
        }
        Ok(())
    }
}

/// How many wallet preparations that pay rent (a Solana provisioning opening two token
/// accounts) one tenant may ask for per window, on each such rail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RentQuota {
    /// Preparations per tenant and rail per window; 0 refuses every one.
    pub max_per_tenant: u32,
    /// The window, in milliseconds.
    pub window_ms: i64,
}

impl Default for RentQuota {
    /// 1,000 a day per tenant: at about 0.004 SOL of rent each, a leaked key can cost the
    /// service at most ~4 SOL a day per tenant before someone notices.
    fn default() -> Self {
        RentQuota {
            max_per_tenant: 1_000,
            window_ms: 24 * 3_600_000,
        }
    }
}

impl RentQuota {
    /// Refuses a window that is not positive.
    pub fn validate(&self) -> Result<(), String> {
        if self.window_ms <= 0 {
            return Err("rent_quota.window_ms must be positive".into());
        }
        Ok(())
    }
}

/// One tenant's count of rent-paying preparations on one rail, stored as a record and
/// updated with a version check.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TenantQuota {
    /// `rent:<rail>:<tenant>` ([`TenantQuota::id_of`]).
    pub id: String,
    /// The tenant counted.
    pub tenant: TenantId,
    /// When the first preparation was counted.
    pub created_at: Timestamp,
    /// The current window's count.
    pub used: Window,
}

impl TenantQuota {
    /// The record id of `tenant`'s quota on `rail`: found without an index, so two
    /// requests of one tenant always meet on the same record.
    pub fn id_of(tenant: &TenantId, rail: RailId) -> String {
        format!("rent:{}:{}", rail.name(), tenant.0)
    }

    /// A quota with nothing counted yet.
    pub fn new(tenant: &TenantId, rail: RailId, now: Timestamp) -> Self {
        TenantQuota {
            id: Self::id_of(tenant, rail),
            tenant: tenant.clone(),
            created_at: now,
            used: Window::default(),
        }
    }

    /// Counts one preparation, or refuses it with `RateLimited` (nothing counted) when
    /// the window is full.
    pub fn count(&mut self, now: Timestamp, quota: &RentQuota) -> Result<(), RuleError> {
        if self.used.current(now, quota.window_ms) >= quota.max_per_tenant {
            return Err(RuleError::RateLimited {
                what: "rent-paying wallet provisionings of this tenant".into(),
                retry_after_ms: if quota.max_per_tenant == 0 {
                    quota.window_ms
                } else {
                    self.used.retry_after_ms(now, quota.window_ms)
                },
            });
        }
        self.used.add(now, quota.window_ms);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn min_send_floors_each_rail_family() {
        let m = MinSend {
            evm_micros: 100_000,
            tron_micros: 1_000_000,
            solana_micros: 50_000,
        };
        assert!(m.check(RailId::Evm(137), Micros(100_000)).is_ok());
        let e = m.check(RailId::Evm(8453), Micros(99_999)).unwrap_err();
        assert_eq!(e.code(), "AMOUNT_TOO_SMALL");
        assert_eq!(e.param(), Some("amount"));
        assert!(e.to_string().contains("0.1"), "{e}");
        assert!(m.check(RailId::Tron, Micros(999_999)).is_err());
        assert!(m.check(RailId::Tron, Micros(1_000_000)).is_ok());
        assert!(m.check(RailId::Solana, Micros(49_999)).is_err());
        assert!(MinSend::default().check(RailId::Tron, Micros(1)).is_ok());
    }

    #[test]
    fn the_quota_counts_up_to_its_limit_then_refuses_until_the_window_ends() {
        let t = TenantId("t1".into());
        let q = RentQuota {
            max_per_tenant: 2,
            window_ms: 1_000,
        };
        let at = Timestamp::from_millis;
        let mut rec = TenantQuota::new(&t, RailId::Solana, at(0));
        rec.count(at(0), &q).unwrap();
        rec.count(at(10), &q).unwrap();
        let e = rec.count(at(20), &q).unwrap_err();
        assert_eq!(e.code(), "RATE_LIMITED");
        assert_eq!(e.retry_after_ms(), Some(980));
        assert_eq!(rec.used.count, 2, "a refusal counts nothing");
        rec.count(at(1_000), &q).unwrap();
        assert_eq!(rec.used.count, 1, "a new window");
        let none = RentQuota {
            max_per_tenant: 0,
            window_ms: 1_000,
        };
        assert!(
            TenantQuota::new(&t, RailId::Solana, at(0))
                .count(at(0), &none)
                .is_err()
        );
    }
}
