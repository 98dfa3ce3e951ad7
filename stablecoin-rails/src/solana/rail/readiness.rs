//! Readiness (spec 1.5): `DEGRADED`, `INBOUND_READY` or `READY` from the node's reads, the
//! mints, the fee payer's balance and the operator's switches.

use crate::solana::{Commitment, SolanaRail, codec};
use stablecoin_core::ports::{Readiness, ReadinessStatus};

impl SolanaRail {
    pub(super) async fn readiness_inner(&self) -> Readiness {
        let mut degraded: Vec<String> = Vec::new();
        let mut inbound_only: Vec<String> = Vec::new();
        // Reads: blockhash, both mints, fee payer balance.
        if let Err(e) = self.rpc.get_latest_blockhash(Commitment::Finalized).await {
            degraded.push(format!("solana rpc unreachable: {e}"));
        } else {
            for (token, mint) in self.config.mints() {
                match self
                    .rpc
                    .get_account_info(&mint, Commitment::Finalized)
                    .await
                {
                    Ok(Some(acc)) if acc.owner == self.config.token_program => {
                        match codec::parse_mint(&acc.data) {
                            Ok(m) if m.decimals == self.config.decimals => {}
                            Ok(m) => degraded.push(format!(
                                "{token} mint {mint} has {} decimals, configured {}",
                                m.decimals, self.config.decimals
                            )),
                            Err(e) => degraded.push(format!("{token} mint {mint}: {e}")),
                        }
                    }
                    Ok(Some(_)) => degraded.push(format!(
                        "{token} mint {mint} is not owned by the token program"
                    )),
                    Ok(None) => degraded.push(format!("{token} mint {mint} does not exist")),
                    Err(e) => degraded.push(format!("{token} mint {mint} unreadable: {e}")),
                }
            }
            match self.fee_payer().await {
                Err(e) => degraded.push(format!("fee payer key: {e}")),
                Ok(fp) => match self.rpc.get_balance(&fp, Commitment::Confirmed).await {
                    Err(e) => degraded.push(format!("fee payer balance unreadable: {e}")),
                    Ok(lamports) => {
                        // Provisioning pays two token-account rents and one fee.
                        match self
                            .rpc
                            .get_minimum_balance_for_rent_exemption(codec::TOKEN_ACCOUNT_LEN)
                            .await
                        {
                            Err(e) => degraded.push(format!("rent unreadable: {e}")),
                            Ok(rent) => {
                                let need = rent
                                    .saturating_mul(2)
                                    .saturating_add(codec::LAMPORTS_PER_SIGNATURE);
                                if lamports < need {
                                    degraded.push(format!(
                                        "fee payer {fp} holds {lamports} lamports: cannot fund \
                                         zero-SOL provisioning ({need} needed)"
                                    ));
                                }
                            }
                        }
                        if lamports < self.config.min_fee_payer_lamports_for_sends {
                            inbound_only.push(format!(
                                "fee payer {fp} holds {lamports} lamports, below the {} needed \
                                 for sponsored sends",
                                self.config.min_fee_payer_lamports_for_sends
                            ));
                        }
                    }
                },
            }
        }
        if !self.config.scan_enabled {
            degraded.push("receipt monitoring disabled (SOLANA_SCAN_ENABLED is not true)".into());
        }
        if !self.config.sends_enabled {
            inbound_only.push("sponsored sends disabled by configuration".into());
        }
        let status = if !degraded.is_empty() {
            ReadinessStatus::Degraded
        } else if !inbound_only.is_empty() {
            ReadinessStatus::InboundReady
        } else {
            ReadinessStatus::Ready
        };
        degraded.extend(inbound_only);
        Readiness {
            status,
            reasons: degraded,
        }
    }
}
