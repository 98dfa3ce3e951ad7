//! Zero-SOL provisioning: a wallet's USDC and USDT associated token accounts, the
//! service paying fee and rent, returned once finalized.

use super::{addr, read_err, rejected, unavailable};
use crate::solana::{Commitment, SolanaProvisioned, SolanaRail, codec};
use solana_pubkey::Pubkey;
use stablecoin_core::ports::{KeyPurpose, RailError};

impl SolanaRail {
    /// Creates the USDC and USDT associated token accounts of the phone's wallet with
    /// the service as fee and rent payer, and returns once they are finalized. The
    /// customer signs nothing and holds no SOL. Repeating it is idempotent (`created:
    /// false` once both exist).
    pub async fn provision(&self, phone: &str) -> Result<SolanaProvisioned, RailError> {
        self.provision_purpose(&KeyPurpose::PhoneWallet(phone.to_string()))
            .await
    }

    /// [`provision`](Self::provision) for any key purpose.
    pub async fn provision_purpose(
        &self,
        purpose: &KeyPurpose,
    ) -> Result<SolanaProvisioned, RailError> {
        let owner = self.key_of(purpose).await?;
        let fee_payer = self.fee_payer().await?;
        if owner == fee_payer {
            return Err(rejected(
                "the fee payer cannot be provisioned as a customer",
            ));
        }
        let tp = self.config.token_program;
        let atas: Vec<(Pubkey, Pubkey)> = self
            .config
            .mints()
            .iter()
            .map(|(_, m)| (*m, codec::associated_token_address(&owner, m, &tp)))
            .collect();
        let mut signature = None;
        let mut attempts = 0u32;
        loop {
            let missing = self
                .missing_atas(&owner, &atas, Commitment::Finalized)
                .await?;
            if missing.is_empty() {
                break;
            }
            if attempts >= 3 {
                return Err(RailError::Unknown {
                    reason: "provisioning transactions expired three times without landing".into(),
                });
            }
            attempts += 1;
            let ixs = codec::provision_instructions(&fee_payer, &owner, &missing, &tp);
            let signed = self
                .build_and_sign(
                    &ixs,
                    &fee_payer,
                    &[(fee_payer, self.config.fee_payer.clone())],
                )
                .await?;
            signature = Some(signed.signature.to_string());
            match self.broadcast(&signed.wire, &signed.signature).await {
                Ok(()) | Err(RailError::Unknown { .. }) => {}
                Err(e) => return Err(e),
            }
            if !self.wait_finalized(&signed).await? {
                // Expired unseen: build a fresh one (the idempotent creates make a
                // late landing of the old one harmless, but it can no longer land).
                continue;
            }
        }
        Ok(SolanaProvisioned {
            address: addr(&owner),
            usdc_ata: addr(&atas[0].1),
            usdt_ata: addr(&atas[1].1),
            created: signature.is_some(),
            signature,
        })
    }

    /// The mints whose ATA is missing (and checks that existing ones are token accounts
    /// of the right mint and owner).
    async fn missing_atas(
        &self,
        owner: &Pubkey,
        atas: &[(Pubkey, Pubkey)],
        commitment: Commitment,
    ) -> Result<Vec<Pubkey>, RailError> {
        let mut missing = Vec::new();
        for (mint, ata) in atas {
            match self
                .rpc
                .get_account_info(ata, commitment)
                .await
                .map_err(read_err)?
            {
                None => missing.push(*mint),
                Some(acc) => {
                    let state = codec::parse_token_account(&acc.data).map_err(|e| {
                        unavailable(format!("account {ata} is not a token account: {e}"))
                    })?;
                    if acc.owner != self.config.token_program
                        || state.mint != *mint
                        || state.owner != *owner
                    {
                        return Err(unavailable(format!(
                            "account {ata} is not the {mint} token account of {owner}"
                        )));
                    }
                }
            }
        }
        Ok(missing)
    }
}
