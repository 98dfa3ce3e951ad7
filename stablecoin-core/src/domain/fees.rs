//! Transfer fees: the service fee and the tenant's own fee (spec 1.8 and 8).
//!
//! Both fees are deducted from the amount sent, so the sender is debited exactly the
//! requested amount and the recipient receives the remainder.
//!
//! Rounding: every fee rounds DOWN to the micro-unit. A fee is a charge on the customer,
//! so a fraction of a micro-unit that cannot be represented goes to the customer (the
//! recipient), never to the service or the tenant: nobody is ever charged more than the
//! published rate. All arithmetic is on integer micro-units with `u128` intermediates, so
//! it cannot overflow and the parts always add back to the amount exactly.

use crate::domain::RuleError;
use crate::domain::money::Micros;
use serde::{Deserialize, Serialize};

/// The service fee rate in basis points (0.30%).
pub const SERVICE_FEE_BPS: u64 = 30;
/// The service fee ceiling (1.20 tokens).
pub const SERVICE_FEE_CAP: Micros = Micros(1_200_000);
/// The highest percentage a tenant may charge (10%), so a tenant cannot take most of a
/// customer's transfer.
pub const MAX_TENANT_FEE_BPS: u32 = 1000;

const BPS_DENOMINATOR: u128 = 10_000;

/// `amount * bps / 10_000`, rounded down; saturates rather than overflowing for rates that
/// `TenantPricing::validate` would reject anyway.
fn bps_of(amount: Micros, bps: u128) -> Micros {
    let fee = u128::from(amount.0) * bps / BPS_DENOMINATOR;
    Micros(u64::try_from(fee).unwrap_or(u64::MAX))
}

/// A tenant's own fee on top of the service fee. The modes never combine (spec 8), which
/// the enum shape enforces.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "SCREAMING_SNAKE_CASE")]
pub enum TenantPricing {
    /// No tenant fee.
    #[default]
    None,
    /// `fee_cap_micros == 0` means uncapped.
    Percentage {
        /// Basis points of the amount, at most [`MAX_TENANT_FEE_BPS`].
        fee_bps: u32,
        /// Ceiling of the fee, in micro-units; 0 for none.
        fee_cap_micros: u64,
    },
    /// A fixed fee per transfer, waived when the transfer cannot carry it.
    Flat {
        /// The fee, in micro-units.
        fee_flat_micros: u64,
    },
}

impl TenantPricing {
    /// Checked when pricing is configured and again before every split, so a pricing
    /// record stored before a rule change can never overcharge a customer.
    pub fn validate(&self) -> Result<(), RuleError> {
        match self {
            TenantPricing::Percentage { fee_bps, .. } if *fee_bps > MAX_TENANT_FEE_BPS => {
                Err(RuleError::InvalidPricing {
                    reason: format!(
                        "fee_bps {fee_bps} exceeds the maximum of {MAX_TENANT_FEE_BPS} (10%)"
                    ),
                })
            }
            _ => Ok(()),
        }
    }

    /// Builds pricing from the loose fields of an API request or CLI flags.
    ///
    /// A field belonging to the other mode is refused rather than ignored: a tenant who
    /// sends both a percentage and a flat fee has misunderstood the pricing, and silently
    /// picking one would charge customers something the tenant did not intend.
    pub fn from_parts(
        mode: &str,
        fee_bps: Option<u32>,
        fee_cap_micros: Option<u64>,
        fee_flat_micros: Option<u64>,
    ) -> Result<Self, RuleError> {
        let bad = |reason: &str| RuleError::InvalidPricing {
            reason: reason.to_string(),
        };
        let pricing = match mode {
            "NONE" => {
                if fee_bps.is_some() || fee_cap_micros.is_some() || fee_flat_micros.is_some() {
                    return Err(bad("mode NONE takes no fee fields"));
                }
                TenantPricing::None
            }
            "PERCENTAGE" => {
                if fee_flat_micros.is_some() {
                    return Err(bad(
                        "fee_flat_micros is not allowed with mode PERCENTAGE: the modes never combine",
                    ));
                }
                let fee_bps = fee_bps.ok_or_else(|| bad("mode PERCENTAGE requires fee_bps"))?;
                TenantPricing::Percentage {
                    fee_bps,
                    fee_cap_micros: fee_cap_micros.unwrap_or(0),
                }
            }
            "FLAT" => {
                if fee_bps.is_some() || fee_cap_micros.is_some() {
                    return Err(bad(
                        "fee_bps and fee_cap_micros are not allowed with mode FLAT: the modes never combine",
                    ));
                }
                let fee_flat_micros =
                    fee_flat_micros.ok_or_else(|| bad("mode FLAT requires fee_flat_micros"))?;
                TenantPricing::Flat { fee_flat_micros }
            }
            other => {
                return Err(RuleError::InvalidPricing {
                    reason: format!(
                        "unknown mode {:?}: expected PERCENTAGE, FLAT or NONE",
                        other.chars().take(32).collect::<String>()
                    ),
                });
            }
        };
        pricing.validate()?;
        Ok(pricing)
    }

    /// The fee as configured, before `split_fees` decides whether it must be waived; it may
    /// exceed `amount` (a flat fee on a tiny transfer).
    pub fn tenant_fee(&self, amount: Micros) -> Micros {
        match *self {
            TenantPricing::None => Micros::ZERO,
            TenantPricing::Percentage {
                fee_bps,
                fee_cap_micros,
            } => {
                let fee = bps_of(amount, u128::from(fee_bps));
                if fee_cap_micros == 0 {
                    fee
                } else {
                    fee.min(Micros(fee_cap_micros))
                }
            }
            TenantPricing::Flat { fee_flat_micros } => Micros(fee_flat_micros),
        }
    }
}

/// How one transfer amount is divided. `recipient + service_fee + tenant_fee == amount`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FeeSplit {
    /// What the sender is debited: the requested amount.
    pub amount: Micros,
    /// What the recipient receives.
    pub recipient: Micros,
    /// The service's fee ([`service_fee`] of the amount; zero for a fee-less send).
    pub service_fee: Micros,
    /// The tenant's fee per its [`TenantPricing`]; zero when waived.
    pub tenant_fee: Micros,
    /// Reported so the tenant can see why a transfer earned it nothing.
    pub tenant_fee_waived: bool,
}

impl FeeSplit {
    /// No fee at all: the recipient gets the whole amount (native TRON sends, spec 8.4:
    /// no TRON business fee and no EVM tenant fee).
    pub fn none(amount: Micros) -> FeeSplit {
        FeeSplit {
            amount,
            recipient: amount,
            service_fee: Micros::ZERO,
            tenant_fee: Micros::ZERO,
            tenant_fee_waived: false,
        }
    }

    /// Asserts (debug builds, tests, the `sim` profile) the split's invariant: the
    /// parts add up to the amount, `recipient + service_fee + tenant_fee == amount`, so
    /// a send neither creates nor loses a micro-unit. The sum is taken in `u128`, so the
    /// check itself cannot overflow.
    pub fn assert_conserves(&self) {
        let parts = u128::from(self.recipient.0)
            + u128::from(self.service_fee.0)
            + u128::from(self.tenant_fee.0);
        debug_assert_eq!(
            parts,
            u128::from(self.amount.0),
            "fee split does not add up to the amount: {self:?}"
        );
    }
}

/// The service fee: 0.30% rounded down, capped at 1.20. Because the rate is below 100%
/// and rounds down, it is always strictly less than a non-zero amount.
pub fn service_fee(amount: Micros) -> Micros {
    bps_of(amount, u128::from(SERVICE_FEE_BPS)).min(SERVICE_FEE_CAP)
}

/// Splits a transfer amount into recipient, service fee and tenant fee.
///
/// The tenant fee is waived whole (not reduced) when charging it would leave the
/// recipient nothing (spec 8, rule 3): a partial fee would make the charge depend on the
/// amount in a way the tenant never configured.
pub fn split_fees(amount: Micros, pricing: &TenantPricing) -> Result<FeeSplit, RuleError> {
    if amount.is_zero() {
        return Err(RuleError::InvalidAmount {
            input: amount.to_decimal_string(),
            reason: "amount must be greater than zero".into(),
        });
    }
    pricing.validate()?;
    let service_fee = service_fee(amount);
    // The service fee is always below a non-zero amount ([`service_fee`]). Were it not,
    // the send is refused rather than split into parts that do not add up.
    debug_assert!(
        service_fee < amount,
        "service fee {service_fee:?} >= {amount:?}"
    );
    let after_service =
        amount
            .checked_sub(service_fee)
            .ok_or_else(|| RuleError::InvalidAmount {
                input: amount.to_decimal_string(),
                reason: "amount does not cover the service fee".into(),
            })?;
    let wanted = pricing.tenant_fee(amount);
    let (tenant_fee, tenant_fee_waived) = match after_service.checked_sub(wanted) {
        Some(rest) if !rest.is_zero() => (wanted, false),
        _ => (Micros::ZERO, !wanted.is_zero()),
    };
    let recipient = Micros(after_service.0 - tenant_fee.0);
    let split = FeeSplit {
        amount,
        recipient,
        service_fee,
        tenant_fee,
        tenant_fee_waived,
    };
    split.assert_conserves();
    Ok(split)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn m(s: &str) -> Micros {
        Micros::parse_decimal(s).unwrap()
    }

    #[test]
    fn a_split_that_adds_up_passes_its_check() {
        split_fees(m("100"), &TenantPricing::None)
            .unwrap()
            .assert_conserves();
        FeeSplit::none(m("5")).assert_conserves();
    }

    /// The check is live in debug builds: a split whose parts miss a micro-unit panics.
    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "fee split does not add up")]
    fn a_split_that_loses_a_micro_unit_is_caught() {
        let mut s = split_fees(m("100"), &TenantPricing::None).unwrap();
        s.recipient = Micros(s.recipient.0 - 1);
        s.assert_conserves();
    }

    #[test]
    fn service_fee_worked_examples() {
        assert_eq!(service_fee(m("100")), m("0.300000"));
        assert_eq!(service_fee(m("1000")), m("1.200000"));
        assert_eq!(service_fee(m("400")), m("1.200000")); // exactly at the cap
        assert_eq!(service_fee(m("399.999999")), m("1.199999")); // 1.1999999997 rounds down
        assert_eq!(service_fee(Micros(1)), Micros::ZERO);
        assert_eq!(service_fee(Micros(333)), Micros::ZERO); // 0.999 micro rounds down
        assert_eq!(service_fee(Micros(334)), Micros(1));
        assert_eq!(service_fee(Micros(u64::MAX)), SERVICE_FEE_CAP);
    }

    #[test]
    fn split_without_tenant_fee() {
        let s = split_fees(m("100"), &TenantPricing::None).unwrap();
        assert_eq!(s.recipient, m("99.700000"));
        assert_eq!(s.service_fee, m("0.300000"));
        assert_eq!(s.tenant_fee, Micros::ZERO);
        assert!(!s.tenant_fee_waived);

        let s = split_fees(Micros(1), &TenantPricing::None).unwrap();
        assert_eq!((s.recipient, s.service_fee), (Micros(1), Micros::ZERO));
    }

    #[test]
    fn percentage_fee_with_and_without_cap() {
        let uncapped = TenantPricing::Percentage {
            fee_bps: 100,
            fee_cap_micros: 0,
        };
        let s = split_fees(m("1000"), &uncapped).unwrap();
        assert_eq!(s.service_fee, m("1.2"));
        assert_eq!(s.tenant_fee, m("10"));
        assert_eq!(s.recipient, m("988.8"));

        let capped = TenantPricing::Percentage {
            fee_bps: 100,
            fee_cap_micros: 2_500_000,
        };
        let s = split_fees(m("1000"), &capped).unwrap();
        assert_eq!(s.tenant_fee, m("2.5"));
        assert_eq!(s.recipient, m("996.3"));
        // Below the cap, the percentage applies.
        let s = split_fees(m("100"), &capped).unwrap();
        assert_eq!(s.tenant_fee, m("1"));
        assert_eq!(s.recipient, m("98.7"));
        // Percentages round down too.
        assert_eq!(capped.tenant_fee(Micros(199)), Micros(1));
    }

    #[test]
    fn flat_fee_and_waiver() {
        let flat = TenantPricing::Flat {
            fee_flat_micros: 500_000,
        };
        let s = split_fees(m("10"), &flat).unwrap();
        assert_eq!(s.service_fee, m("0.03"));
        assert_eq!(s.tenant_fee, m("0.5"));
        assert_eq!(s.recipient, m("9.47"));
        assert!(!s.tenant_fee_waived);

        // Flat fee bigger than the amount: waived, the recipient gets everything after the
        // service fee.
        let s = split_fees(m("0.4"), &flat).unwrap();
        assert_eq!(s.tenant_fee, Micros::ZERO);
        assert!(s.tenant_fee_waived);
        assert_eq!(s.service_fee, m("0.0012"));
        assert_eq!(s.recipient, m("0.3988"));

        // Fee that would leave the recipient exactly zero is waived as well.
        let s = split_fees(m("0.5"), &flat).unwrap();
        assert!(s.tenant_fee_waived);
        assert_eq!(s.recipient, m("0.4985"));
        // One micro left over is enough to charge it.
        let s = split_fees(Micros(501_505), &flat).unwrap();
        assert_eq!(s.service_fee, Micros(1_504));
        assert!(!s.tenant_fee_waived);
        assert_eq!(s.recipient, Micros(1));
        let s = split_fees(Micros(501_504), &flat).unwrap();
        assert!(s.tenant_fee_waived);
        assert_eq!(s.recipient, Micros(500_000));
    }

    #[test]
    fn zero_amount_and_bad_pricing_are_refused() {
        assert_eq!(
            split_fees(Micros::ZERO, &TenantPricing::None)
                .unwrap_err()
                .code(),
            "INVALID_AMOUNT"
        );
        let bad = TenantPricing::Percentage {
            fee_bps: 1001,
            fee_cap_micros: 0,
        };
        assert_eq!(bad.validate().unwrap_err().code(), "INVALID_PRICING");
        assert_eq!(
            split_fees(m("1"), &bad).unwrap_err().code(),
            "INVALID_PRICING"
        );
        assert!(
            TenantPricing::Percentage {
                fee_bps: 1000,
                fee_cap_micros: 0
            }
            .validate()
            .is_ok()
        );
        assert!(
            TenantPricing::Flat {
                fee_flat_micros: u64::MAX
            }
            .validate()
            .is_ok()
        );
        assert!(TenantPricing::None.validate().is_ok());
    }

    #[test]
    fn from_parts_rules() {
        assert_eq!(
            TenantPricing::from_parts("PERCENTAGE", Some(50), None, None).unwrap(),
            TenantPricing::Percentage {
                fee_bps: 50,
                fee_cap_micros: 0
            }
        );
        assert_eq!(
            TenantPricing::from_parts("PERCENTAGE", Some(50), Some(7), None).unwrap(),
            TenantPricing::Percentage {
                fee_bps: 50,
                fee_cap_micros: 7
            }
        );
        assert_eq!(
            TenantPricing::from_parts("FLAT", None, None, Some(9)).unwrap(),
            TenantPricing::Flat { fee_flat_micros: 9 }
        );
        assert_eq!(
            TenantPricing::from_parts("NONE", None, None, None).unwrap(),
            TenantPricing::None
        );
        for (mode, bps, cap, flat) in [
            ("PERCENTAGE", Some(50), None, Some(1)),
            ("PERCENTAGE", None, None, None),
            ("PERCENTAGE", None, Some(5), None),
            ("PERCENTAGE", Some(1001), None, None),
            ("FLAT", Some(50), None, Some(1)),
            ("FLAT", None, Some(5), Some(1)),
            ("FLAT", None, None, None),
            ("NONE", Some(1), None, None),
            ("NONE", None, None, Some(1)),
            ("percentage", Some(50), None, None),
            ("", None, None, None),
        ] {
            let err = TenantPricing::from_parts(mode, bps, cap, flat).unwrap_err();
            assert_eq!(
                err.code(),
                "INVALID_PRICING",
                "{mode} {bps:?} {cap:?} {flat:?}"
            );
        }
    }

    #[test]
    fn pricing_serde_shape() {
        let p = TenantPricing::Percentage {
            fee_bps: 25,
            fee_cap_micros: 0,
        };
        let v = serde_json::to_value(&p).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"mode": "PERCENTAGE", "fee_bps": 25, "fee_cap_micros": 0})
        );
        assert_eq!(serde_json::from_value::<TenantPricing>(v).unwrap(), p);
        let v = serde_json::to_value(TenantPricing::Flat { fee_flat_micros: 3 }).unwrap();
        assert_eq!(v, serde_json::json!({"mode": "FLAT", "fee_flat_micros": 3}));
        assert_eq!(
            serde_json::to_value(TenantPricing::None).unwrap(),
            serde_json::json!({"mode": "NONE"})
        );
    }

    fn any_valid_pricing() -> impl Strategy<Value = TenantPricing> {
        prop_oneof![
            Just(TenantPricing::None),
            (
                0..=MAX_TENANT_FEE_BPS,
                prop_oneof![Just(0u64), any::<u64>(), 0u64..10_000_000]
            )
                .prop_map(|(fee_bps, fee_cap_micros)| TenantPricing::Percentage {
                    fee_bps,
                    fee_cap_micros
                }),
            prop_oneof![any::<u64>(), 0u64..10_000_000]
                .prop_map(|fee_flat_micros| TenantPricing::Flat { fee_flat_micros }),
        ]
    }

    fn any_amount() -> impl Strategy<Value = Micros> {
        prop_oneof![
            1u64..1_000,
            1u64..10_000_000,
            1u64..10_000_000_000,
            1u64..=u64::MAX
        ]
        .prop_map(Micros)
    }

    proptest! {
        #[test]
        fn conservation_and_exact_debit(amount in any_amount(), pricing in any_valid_pricing()) {
            let s = split_fees(amount, &pricing).unwrap();
            prop_assert_eq!(s.amount, amount);
            let sum = u128::from(s.recipient.0) + u128::from(s.service_fee.0) + u128::from(s.tenant_fee.0);
            prop_assert_eq!(sum, u128::from(amount.0));
            prop_assert!(s.recipient.0 > 0);
        }

        #[test]
        fn caps_respected(amount in any_amount(), pricing in any_valid_pricing()) {
            let s = split_fees(amount, &pricing).unwrap();
            prop_assert!(s.service_fee <= SERVICE_FEE_CAP);
            // Never more than the rate, never more than one micro under it.
            let exact = u128::from(amount.0) * u128::from(SERVICE_FEE_BPS);
            prop_assert!(u128::from(s.service_fee.0) * 10_000 <= exact);
            if s.service_fee < SERVICE_FEE_CAP {
                prop_assert!((u128::from(s.service_fee.0) + 1) * 10_000 > exact);
            }
            match pricing {
                TenantPricing::Percentage { fee_bps, fee_cap_micros } => {
                    if fee_cap_micros != 0 {
                        prop_assert!(s.tenant_fee.0 <= fee_cap_micros);
                    }
                    prop_assert!(
                        u128::from(s.tenant_fee.0) * 10_000
                            <= u128::from(amount.0) * u128::from(fee_bps)
                    );
                }
                TenantPricing::Flat { fee_flat_micros } => {
                    prop_assert!(s.tenant_fee.0 == fee_flat_micros || s.tenant_fee_waived);
                }
                TenantPricing::None => {
                    prop_assert_eq!(s.tenant_fee, Micros::ZERO);
                    prop_assert!(!s.tenant_fee_waived);
                }
            }
        }

        #[test]
        fn waiver_only_when_needed(amount in any_amount(), pricing in any_valid_pricing()) {
            let s = split_fees(amount, &pricing).unwrap();
            let wanted = pricing.tenant_fee(amount);
            let left = u128::from(amount.0) - u128::from(s.service_fee.0);
            let would_leave_nothing = u128::from(wanted.0) >= left;
            prop_assert_eq!(s.tenant_fee_waived, would_leave_nothing && !wanted.is_zero());
            if s.tenant_fee_waived {
                prop_assert_eq!(s.tenant_fee, Micros::ZERO);
            } else {
                prop_assert_eq!(s.tenant_fee, wanted);
            }
        }

        #[test]
        fn no_negative_part_and_no_overflow(amount in any::<u64>(), pricing in any_valid_pricing()) {
            // Micros is unsigned, so "negative" would show as a panic on underflow or as a
            // part larger than the amount.
            if let Ok(s) = split_fees(Micros(amount), &pricing) {
                prop_assert!(s.recipient.0 <= amount);
                prop_assert!(s.service_fee.0 <= amount);
                prop_assert!(s.tenant_fee.0 <= amount);
            } else {
                prop_assert_eq!(amount, 0);
            }
        }

        #[test]
        fn validate_rejects_bps_over_max(fee_bps in (MAX_TENANT_FEE_BPS + 1)..=u32::MAX, cap in any::<u64>(), amount in any_amount()) {
            let p = TenantPricing::Percentage { fee_bps, fee_cap_micros: cap };
            prop_assert_eq!(p.validate().unwrap_err().code(), "INVALID_PRICING");
            prop_assert_eq!(split_fees(amount, &p).unwrap_err().code(), "INVALID_PRICING");
            prop_assert_eq!(
                TenantPricing::from_parts("PERCENTAGE", Some(fee_bps), Some(cap), None).unwrap_err().code(),
                "INVALID_PRICING"
            );
            // tenant_fee itself must not overflow even on unvalidated pricing.
            let _ = p.tenant_fee(amount);
        }

        #[test]
        fn from_parts_rejects_mixing_modes(
            bps in proptest::option::of(any::<u32>()),
            cap in proptest::option::of(any::<u64>()),
            flat in any::<u64>(),
        ) {
            prop_assert_eq!(
                TenantPricing::from_parts("PERCENTAGE", bps, cap, Some(flat)).unwrap_err().code(),
                "INVALID_PRICING"
            );
            if bps.is_some() || cap.is_some() {
                prop_assert_eq!(
                    TenantPricing::from_parts("FLAT", bps, cap, Some(flat)).unwrap_err().code(),
                    "INVALID_PRICING"
                );
            } else {
                prop_assert_eq!(
                    TenantPricing::from_parts("FLAT", bps, cap, Some(flat)).unwrap(),
                    TenantPricing::Flat { fee_flat_micros: flat }
                );
            }
        }
    }
}
