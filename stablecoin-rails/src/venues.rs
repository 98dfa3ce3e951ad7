//! [`TreasuryVenue`]: swaps served by the service treasury, for rails without a DEX.
//!
//! An internal conversion at a configured rate and spread, in two payments on the rail,
//! each idempotent by an id derived from the order's:
//! 1. `<order>:in`: the wallet pays `amount_in` of `token_in` to the treasury (the
//!    order's deadline applies, so a `NotFound` after it proves the swap never started);
//! 2. once that is confirmed, `<order>:out:<k>`: the treasury pays the quoted amount of
//!    `token_out` to the wallet. The wallet has paid, so the treasury's leg is owed: it
//!    is retried (attempt `k + 1`) only after attempt `k` failed on chain, never while
//!    one may still land.
//!
//! The venue keeps no state of its own: [`SwapVenue::status`] finds where an order
//! stands by asking the rail about those ids, and sends the next leg when it is due, so a
//! crash anywhere resumes from the chain.
//!
//! Liquidity: the treasury's tokens on chain also back the tenants' treasury balances,
//! so the venue may not give out all of them. It trades within a float the operator
//! dedicates to conversions: its net position in the ledger
//! (`swap_venue:treasury:<TOKEN>`, negative once it has given more than it took) may not
//! go below minus the float, and the treasury must hold the amount on chain. Both are
//! checked at the quote and again before the wallet pays.
//!
//! Amounts are integers: the rate is in parts per million of `token_out` per `token_in`
//! (1,000,000 = par), the spread in basis points, and every division rounds down, in the
//! treasury's favour by at most one micro-unit.

use async_trait::async_trait;
use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::ports::{
    KeyPurpose, Ledger, LedgerError, LegRole, PaymentLeg, Rail, RailError, RailId, RailPayment,
    SponsorCost, Submission, SubmissionStatus, SwapOrder, SwapStatus, SwapVenue,
};
use std::sync::Arc;

/// Attempts of the treasury's leg before the venue stops and reports it (each one only
/// after the previous provably failed on chain).
const OUT_ATTEMPTS: u32 = 8;

/// Conversion rate and spread of a [`TreasuryVenue`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TreasuryRate {
    /// USDT per USDC, in parts per million (1,000,000 = par); USDT to USDC uses its
    /// inverse.
    pub usdt_per_usdc_ppm: u64,
    /// The service's margin, in basis points of the amount out.
    pub spread_bps: u32,
}

impl Default for TreasuryRate {
    /// Par, with a 0.10% spread.
    fn default() -> Self {
        TreasuryRate {
            usdt_per_usdc_ppm: 1_000_000,
            spread_bps: 10,
        }
    }
}

impl TreasuryRate {
    /// What `amount_in` of `token_in` buys: `None` for a pair other than USDC/USDT, a
    /// zero rate, or an amount that overflows.
    pub fn amount_out(
        &self,
        token_in: Token,
        token_out: Token,
        amount_in: Micros,
    ) -> Option<Micros> {
        let rate = u128::from(self.usdt_per_usdc_ppm);
        if rate == 0 || self.spread_bps > 10_000 {
            return None;
        }
        let gross = match (token_in, token_out) {
            (Token::Usdc, Token::Usdt) => u128::from(amount_in.0) * rate / 1_000_000,
            (Token::Usdt, Token::Usdc) => u128::from(amount_in.0) * 1_000_000 / rate,
            _ => return None,
        };
        let net = gross * u128::from(10_000 - self.spread_bps) / 10_000;
        u64::try_from(net).ok().map(Micros)
    }
}

/// The treasury venue of one rail (see the module documentation).
pub struct TreasuryVenue {
    rail: Arc<dyn Rail>,
    ledger: Arc<dyn Ledger>,
    rate: TreasuryRate,
    float: Micros,
}

impl TreasuryVenue {
    /// A venue converting on `rail` at `rate`, giving out at most `float` of each token
    /// net of what it took in (its position read from `ledger`).
    pub fn new(
        rail: Arc<dyn Rail>,
        ledger: Arc<dyn Ledger>,
        rate: TreasuryRate,
        float: Micros,
    ) -> Self {
        TreasuryVenue {
            rail,
            ledger,
            rate,
            float,
        }
    }

    fn rejected(reason: impl Into<String>) -> RailError {
        RailError::Rejected {
            reason: reason.into(),
        }
    }

    /// `Rejected` unless `amount` of `token` fits the float and the treasury holds it on
    /// the rail.
    async fn check_liquidity(&self, token: Token, amount: Micros) -> Result<(), RailError> {
        let account = stablecoin_core::ports::accounts::swap_venue(self.name(), token).id;
        let position = match self.ledger.balance(&account).await {
            Ok(b) => b.available(),
            Err(LedgerError::UnknownAccount { .. }) => 0,
            Err(e) => {
                return Err(RailError::Unavailable {
                    reason: format!("ledger: {e}"),
                });
            }
        };
        let room = i128::from(self.float.0) + position;
        if room < i128::from(amount.0) {
            return Err(Self::rejected(format!(
                "treasury liquidity: the conversion float has {} {token} left, {} needed",
                Micros(room.clamp(0, i128::from(u64::MAX)) as u64).to_decimal_string(),
                amount.to_decimal_string()
            )));
        }
        let treasury = self.rail.address_for(&KeyPurpose::Treasury).await?;
        let held = self.rail.balance(&treasury, token).await?;
        if held < amount {
            return Err(Self::rejected(format!(
                "treasury liquidity: {} {token} available, {} needed",
                held.to_decimal_string(),
                amount.to_decimal_string()
            )));
        }
        Ok(())
    }

    fn in_leg(
        &self,
        order: &SwapOrder,
        treasury: stablecoin_core::ports::ChainAddress,
    ) -> RailPayment {
        RailPayment {
            id: format!("{}:in", order.id),
            from: order.from.clone(),
            from_address: order.from_address.clone(),
            token: order.token_in,
            legs: vec![PaymentLeg {
                to: treasury,
                amount: order.amount_in,
                role: LegRole::Recipient,
            }],
            valid_until: order.valid_until,
        }
    }

    /// The treasury's leg, attempt `k`. No deadline: the wallet has paid, so the
    /// treasury's payment is owed however late it lands.
    async fn out_leg(&self, order: &SwapOrder, k: u32) -> Result<RailPayment, RailError> {
        Ok(RailPayment {
            id: format!("{}:out:{k}", order.id),
            from: KeyPurpose::Treasury,
            from_address: self.rail.address_for(&KeyPurpose::Treasury).await?,
            token: order.token_out,
            legs: vec![PaymentLeg {
                to: order.from_address.clone(),
                amount: order.quoted_amount_out,
                role: LegRole::Recipient,
            }],
            valid_until: None,
        })
    }

    /// The treasury's leg of an order whose wallet leg is confirmed (at `in_cost`): the
    /// first attempt not failed on chain, sent if the rail has never seen it. A confirmed
    /// swap reports what its transactions cost the service (it sponsors the wallet's leg
    /// and pays the treasury's), the treasury's attempts that failed on chain included:
    /// they were paid for too.
    async fn advance_out(
        &self,
        order: &SwapOrder,
        in_cost: Option<SponsorCost>,
    ) -> Result<SwapStatus, RailError> {
        let mut spent = in_cost;
        for k in 0..OUT_ATTEMPTS {
            let leg = self.out_leg(order, k).await?;
            match self.rail.status(&leg.id).await? {
                SubmissionStatus::Failed { cost, .. } => {
                    spent = both_legs(spent, cost);
                    continue;
                }
                SubmissionStatus::Confirmed {
                    tx_hash,
                    block,
                    created_recipient_account,
                    cost,
                } => {
                    return Ok(SwapStatus {
                        status: SubmissionStatus::Confirmed {
                            tx_hash,
                            block,
                            created_recipient_account,
                            cost: both_legs(spent, cost),
                        },
                        amount_out: Some(order.quoted_amount_out),
                    });
                }
                SubmissionStatus::Pending { tx_hash } => {
                    return Ok(SwapStatus {
                        status: SubmissionStatus::Pending { tx_hash },
                        amount_out: None,
                    });
                }
                SubmissionStatus::NotFound => {
                    // Never sent, or refused before the network: (re)send the same id,
                    // which the rail deduplicates. A refusal is tried again next poll.
                    let tx_hash = match self.rail.submit(&leg).await {
                        Ok(s) => s.tx_hash,
                        Err(_) => None,
                    };
                    return Ok(SwapStatus {
                        status: SubmissionStatus::Pending { tx_hash },
                        amount_out: None,
                    });
                }
            }
        }
        Err(RailError::Unavailable {
            reason: format!(
                "the treasury's leg of swap {} failed {OUT_ATTEMPTS} times; an operator must look",
                order.id
            ),
        })
    }
}

/// The cost of two of a swap's transactions: their sum, or the one the rail reported.
fn both_legs(a: Option<SponsorCost>, b: Option<SponsorCost>) -> Option<SponsorCost> {
    match (a, b) {
        (Some(a), Some(b)) => Some(SponsorCost {
            native: a.native.saturating_add(b.native),
            energy: a.energy.saturating_add(b.energy),
            bandwidth: a.bandwidth.saturating_add(b.bandwidth),
        }),
        (one, None) | (None, one) => one,
    }
}

#[async_trait]
impl SwapVenue for TreasuryVenue {
    fn name(&self) -> &str {
        "treasury"
    }

    fn rail(&self) -> RailId {
        self.rail.id()
    }

    /// The treasury's address: where the wallet's leg goes. `None` if the rail cannot
    /// derive it now (the swap is then refused by its own first step, not here).
    async fn counterparty(&self) -> Option<stablecoin_core::ports::ChainAddress> {
        self.rail.address_for(&KeyPurpose::Treasury).await.ok()
    }

    async fn quote(
        &self,
        token_in: Token,
        token_out: Token,
        amount_in: Micros,
    ) -> Result<Micros, RailError> {
        let out = self
            .rate
            .amount_out(token_in, token_out, amount_in)
            .ok_or_else(|| {
                Self::rejected(format!(
                    "the treasury does not convert {token_in} to {token_out}"
                ))
            })?;
        self.check_liquidity(token_out, out).await?;
        Ok(out)
    }

    async fn execute(&self, order: &SwapOrder) -> Result<Submission, RailError> {
        // A wallet leg already on its way is sent again as it is (the rail deduplicates
        // it): the liquidity it met then is what it is owed. A new one is checked first.
        let started =
            self.rail.status(&format!("{}:in", order.id)).await? != SubmissionStatus::NotFound;
        if !started {
            if order.quoted_amount_out < order.min_amount_out {
                return Err(Self::rejected("the quote is below the minimum accepted"));
            }
            self.check_liquidity(order.token_out, order.quoted_amount_out)
                .await?;
        }
        let treasury = self.rail.address_for(&KeyPurpose::Treasury).await?;
        self.rail.submit(&self.in_leg(order, treasury)).await
    }

    async fn status(&self, order: &SwapOrder) -> Result<SwapStatus, RailError> {
        match self.rail.status(&format!("{}:in", order.id)).await? {
            SubmissionStatus::Confirmed { cost, .. } => self.advance_out(order, cost).await,
            other => Ok(SwapStatus {
                status: other,
                amount_out: None,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rate_and_spread_are_integer_and_round_down() {
        let par = TreasuryRate::default();
        assert_eq!(
            par.amount_out(Token::Usdc, Token::Usdt, Micros(1_000_000)),
            Some(Micros(999_000))
        );
        let r = TreasuryRate {
            usdt_per_usdc_ppm: 999_500,
            spread_bps: 0,
        };
        assert_eq!(
            r.amount_out(Token::Usdc, Token::Usdt, Micros(3)),
            Some(Micros(2))
        );
        // The inverse: 1 USDT buys 1 / 0.9995 USDC, rounded down.
        assert_eq!(
            r.amount_out(Token::Usdt, Token::Usdc, Micros(1_000_000)),
            Some(Micros(1_000_500))
        );
        assert_eq!(r.amount_out(Token::Usdc, Token::Usdc, Micros(1)), None);
        let zero = TreasuryRate {
            usdt_per_usdc_ppm: 0,
            spread_bps: 0,
        };
        assert_eq!(zero.amount_out(Token::Usdc, Token::Usdt, Micros(1)), None);
    }
}
