//! `broadcasthex`: decoding, TaPoS, expiration, duplicates, signature, Bandwidth, then
//! the validation and execution of each contract type but TriggerSmartContract.

use crate::Addr;
use crate::address::{addr_from_bytes, addr_to_base58, recover};
use crate::chain::{Account, Chain, Refusal, Stored, refuse, tx_size, validate_err};
use crate::pb::{
    self, ACCOUNT_CREATE, BANDWIDTH, DELEGATE, ENERGY, MAX_RESULT_SIZE_IN_TX, TRANSFER, TRIGGER,
    UNDELEGATE,
};
use crate::trigger::plain_info;
use prost::Message;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

impl Chain {
    pub(crate) async fn broadcast(
        &mut self,
        tx_bytes: &[u8],
    ) -> Result<[u8; 32], (Option<[u8; 32]>, Refusal)> {
        let tx = pb::Transaction::decode(tx_bytes).map_err(|e| {
            (
                None,
                refuse(
                    "OTHER_ERROR",
                    format!("other error : invalid protobuf: {e}"),
                ),
            )
        })?;
        let raw = tx
            .raw_data
            .clone()
            .ok_or((None, refuse("OTHER_ERROR", "other error : no raw_data")))?;
        let raw_bytes = raw.encode_to_vec();
        let txid: [u8; 32] = Sha256::digest(&raw_bytes).into();
        let fail = |r: Refusal| (Some(txid), r);

        // java-tron's Wallet.broadcastTransaction checks (and fills) its txID cache before
        // any validation, and answers a hit with DUP_TRANSACTION_ERROR and no message: a
        // txID that was refused once (the txID does not cover the signature) stays refused.
        if !self.seen.insert(txid) {
            return Err(fail(refuse("DUP_TRANSACTION_ERROR", "")));
        }

        // TaPoS: the referenced block must be a recent block of this chain.
        let tapos_ok = raw.ref_block_bytes.len() == 2
            && raw.ref_block_hash.len() == 8
            && self.blocks.iter().rev().take(65_536).any(|b| {
                b.id[6..8] == raw.ref_block_bytes[..] && b.id[8..16] == raw.ref_block_hash[..]
            });
        if !tapos_ok {
            return Err(fail(refuse("TAPOS_ERROR", "Tapos check error")));
        }
        let head_time = self.head().timestamp;
        if raw.expiration <= head_time || raw.expiration > head_time + 86_400_000 {
            return Err(fail(refuse(
                "TRANSACTION_EXPIRATION_ERROR",
                "transaction expired",
            )));
        }
        if raw.contract.len() != 1 {
            return Err(fail(validate_err("act size should be exactly 1")));
        }
        let contract = &raw.contract[0];
        let param = contract
            .parameter
            .as_ref()
            .map(|p| p.value.clone())
            .unwrap_or_default();
        let owner = match contract.r#type {
            ACCOUNT_CREATE => pb::AccountCreate::decode(&param[..]).map(|c| c.owner_address),
            TRANSFER => pb::Transfer::decode(&param[..]).map(|c| c.owner_address),
            TRIGGER => pb::Trigger::decode(&param[..]).map(|c| c.owner_address),
            DELEGATE | UNDELEGATE => pb::Delegate::decode(&param[..]).map(|c| c.owner_address),
            other => {
                return Err(fail(validate_err(format!(
                    "contract type {other} is not served by the local test node"
                ))));
            }
        }
        .map_err(|e| fail(validate_err(format!("invalid contract parameter: {e}"))))?;
        let owner = addr_from_bytes(&owner).ok_or_else(|| fail(validate_err("Invalid address")))?;

        // Signature: exactly the owner's (owner permission, threshold 1).
        let Some(sig) = tx.signature.first() else {
            return Err(fail(refuse(
                "SIGERROR",
                "validate signature error miss sig or contract",
            )));
        };
        match recover(&txid, sig) {
            Ok(signer) if signer == owner && tx.signature.len() == 1 => {}
            Ok(signer) => {
                return Err(fail(refuse(
                    "SIGERROR",
                    format!(
                        "validate signature error {} is signed by {} but it is not contained of permission.",
                        hex::encode(txid),
                        addr_to_base58(&signer)
                    ),
                )));
            }
            Err(e) => {
                return Err(fail(refuse(
                    "SIGERROR",
                    format!("validate signature error {e}"),
                )));
            }
        }

        // Execute against a copy of the state; commit only if accepted.
        let snapshot = (
            self.accounts.clone(),
            self.delegations.clone(),
            self.token.clone(),
        );
        let size = tx_size(&tx) + MAX_RESULT_SIZE_IN_TX;
        let outcome = self
            .execute(&owner, contract.r#type, &param, raw.fee_limit, size, &txid)
            .await;
        let (mut info, contract_ret) = match outcome {
            Ok(v) => v,
            Err(r) => {
                (self.accounts, self.delegations, self.token) = snapshot;
                return Err(fail(r));
            }
        };
        info["id"] = json!(hex::encode(txid));
        self.txs.insert(
            txid,
            Stored {
                raw_hex: hex::encode(&raw_bytes),
                signature: tx.signature.iter().map(hex::encode).collect(),
                info,
                contract_ret,
                block: None,
            },
        );
        self.pending.push(txid);
        self.accepted += 1;
        if contract.r#type == TRIGGER {
            self.controls
                .triggers_accepted
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
        if self.config.automine {
            self.produce_block();
        }
        Ok(txid)
    }

    pub(crate) fn account_mut(&mut self, a: &Addr) -> Result<&mut Account, Refusal> {
        self.accounts
            .get_mut(a)
            .ok_or_else(|| validate_err(format!("account [{}] does not exist", addr_to_base58(a))))
    }

    /// Bandwidth as java-tron's BandwidthProcessor: staked, then free, then burnt TRX.
    pub(crate) fn consume_bandwidth(
        &mut self,
        owner: &Addr,
        bytes: u64,
    ) -> Result<(u64, u64), Refusal> {
        let acct = self.accounts.get(owner).cloned().ok_or_else(|| {
            validate_err(format!(
                "account [{}] does not exist",
                addr_to_base58(owner)
            ))
        })?;
        let staked_left = self.net_limit(&acct).saturating_sub(acct.net_usage);
        let free_left = self
            .config
            .free_net_limit
            .saturating_sub(acct.free_net_usage);
        let fee = bytes * self.config.bandwidth_price_sun;
        let a = self.account_mut(owner)?;
        if staked_left >= bytes {
            a.net_usage += bytes;
            Ok((bytes, 0))
        } else if free_left >= bytes {
            a.free_net_usage += bytes;
            Ok((bytes, 0))
        } else if a.balance >= fee {
            a.balance -= fee;
            Ok((0, fee))
        } else {
            Err(refuse(
                "BANDWITH_ERROR",
                "AccountResourceInsufficient error",
            ))
        }
    }

    pub(crate) async fn execute(
        &mut self,
        owner: &Addr,
        kind: i32,
        param: &[u8],
        fee_limit: i64,
        size: u64,
        txid: &[u8; 32],
    ) -> Result<(Value, &'static str), Refusal> {
        if !self.accounts.contains_key(owner) {
            return Err(validate_err(format!(
                "account [{}] does not exist",
                addr_to_base58(owner)
            )));
        }
        match kind {
            ACCOUNT_CREATE => {
                let c =
                    pb::AccountCreate::decode(param).map_err(|e| validate_err(e.to_string()))?;
                let target = addr_from_bytes(&c.account_address)
                    .ok_or_else(|| validate_err("Invalid account address"))?;
                if self.accounts.contains_key(&target) {
                    return Err(validate_err("Account has existed"));
                }
                let (net_usage, net_fee) = self.create_bandwidth(owner, size)?;
                let fee = self.config.create_account_fee_sun;
                let a = self.account_mut(owner)?;
                if a.balance < fee {
                    return Err(validate_err(
                        "Validate CreateAccountActuator error, insufficient fee.",
                    ));
                }
                a.balance -= fee;
                self.accounts.insert(target, Account::default());
                Ok((plain_info(fee + net_fee, net_usage, net_fee), "SUCCESS"))
            }
            TRANSFER => {
                let c = pb::Transfer::decode(param).map_err(|e| validate_err(e.to_string()))?;
                let to = addr_from_bytes(&c.to_address)
                    .ok_or_else(|| validate_err("Invalid toAddress!"))?;
                if c.amount <= 0 {
                    return Err(validate_err("Amount must be greater than 0."));
                }
                if &to == owner {
                    return Err(validate_err("Cannot transfer TRX to yourself."));
                }
                let creates = !self.accounts.contains_key(&to);
                let create_fee = if creates {
                    self.config.create_account_fee_sun
                } else {
                    0
                };
                if self.accounts[owner].balance < c.amount as u64 + create_fee {
                    return Err(validate_err(
                        "Validate TransferContract error, balance is not sufficient.",
                    ));
                }
                let (net_usage, net_fee) = if creates {
                    self.create_bandwidth(owner, size)?
                } else {
                    self.consume_bandwidth(owner, size)?
                };
                let a = self.account_mut(owner)?;
                if a.balance < c.amount as u64 + create_fee {
                    return Err(validate_err(
                        "Validate TransferContract error, balance is not sufficient.",
                    ));
                }
                a.balance -= c.amount as u64 + create_fee;
                self.accounts.entry(to).or_default().balance += c.amount as u64;
                Ok((
                    plain_info(create_fee + net_fee, net_usage, net_fee),
                    "SUCCESS",
                ))
            }
            DELEGATE | UNDELEGATE => {
                let c = pb::Delegate::decode(param).map_err(|e| validate_err(e.to_string()))?;
                let receiver = addr_from_bytes(&c.receiver_address)
                    .ok_or_else(|| validate_err("Invalid receiverAddress"))?;
                if c.resource != ENERGY && c.resource != BANDWIDTH {
                    return Err(validate_err(
                        "ResourceCode error, valid ResourceCode[BANDWIDTH、ENERGY]",
                    ));
                }
                let res_name = if c.resource == ENERGY {
                    "Energy"
                } else {
                    "Bandwidth"
                };
                let balance = u64::try_from(c.balance).unwrap_or(0);
                if kind == DELEGATE {
                    if &receiver == owner {
                        return Err(validate_err(
                            "receiverAddress must not be the same as ownerAddress",
                        ));
                    }
                    if !self.accounts.contains_key(&receiver) {
                        return Err(validate_err(format!(
                            "Account [{}] does not exist",
                            hex::encode(receiver)
                        )));
                    }
                    if balance < 1_000_000 {
                        return Err(validate_err(
                            "delegateBalance must be greater than or equal to 1 TRX",
                        ));
                    }
                    let a = &self.accounts[owner];
                    let available = if c.resource == ENERGY {
                        a.frozen_energy - a.delegated_energy
                    } else {
                        a.frozen_bandwidth - a.delegated_bandwidth
                    };
                    if balance > available {
                        return Err(validate_err(format!(
                            "delegateBalance must be less than or equal to available Freeze{}V2 balance",
                            res_name
                        )));
                    }
                } else {
                    let have = self
                        .delegations
                        .get(&(*owner, receiver, c.resource))
                        .copied()
                        .unwrap_or(0);
                    if have == 0 {
                        return Err(validate_err("delegated Resource does not exist"));
                    }
                    if balance == 0 || balance > have {
                        return Err(validate_err(format!(
                            "insufficient delegatedFrozenBalance({res_name}), request={balance}, unfreezeBalance={have}"
                        )));
                    }
                }
                let (net_usage, net_fee) = self.consume_bandwidth(owner, size)?;
                let key = (*owner, receiver, c.resource);
                if kind == DELEGATE {
                    *self.delegations.entry(key).or_default() += balance;
                    let a = self.accounts.get_mut(owner).unwrap();
                    if c.resource == ENERGY {
                        a.delegated_energy += balance;
                    } else {
                        a.delegated_bandwidth += balance;
                    }
                    let r = self.accounts.get_mut(&receiver).unwrap();
                    if c.resource == ENERGY {
                        r.acquired_energy += balance;
                    } else {
                        r.acquired_bandwidth += balance;
                    }
                } else {
                    *self.delegations.get_mut(&key).unwrap() -= balance;
                    // The receiver's usage of the returned share goes back with it.
                    let r = self.accounts.get_mut(&receiver).unwrap();
                    let moved;
                    if c.resource == ENERGY {
                        let stake = r.frozen_energy + r.acquired_energy;
                        moved = (r.energy_usage as u128 * balance as u128 / stake.max(1) as u128)
                            as u64;
                        r.energy_usage -= moved;
                        r.acquired_energy -= balance;
                    } else {
                        let stake = r.frozen_bandwidth + r.acquired_bandwidth;
                        moved =
                            (r.net_usage as u128 * balance as u128 / stake.max(1) as u128) as u64;
                        r.net_usage -= moved;
                        r.acquired_bandwidth -= balance;
                    }
                    let a = self.accounts.get_mut(owner).unwrap();
                    if c.resource == ENERGY {
                        a.delegated_energy -= balance;
                        a.energy_usage += moved;
                    } else {
                        a.delegated_bandwidth -= balance;
                        a.net_usage += moved;
                    }
                }
                Ok((plain_info(net_fee, net_usage, net_fee), "SUCCESS"))
            }
            TRIGGER => self.trigger(owner, param, fee_limit, size, txid).await,
            _ => Err(validate_err("unsupported contract")),
        }
    }

    /// Bandwidth of a transaction that creates an account: staked bandwidth, else a
    /// burn of `create_account_bandwidth_fee_sun`; free bandwidth does not apply.
    pub(crate) fn create_bandwidth(
        &mut self,
        owner: &Addr,
        bytes: u64,
    ) -> Result<(u64, u64), Refusal> {
        let acct = self.accounts[owner].clone();
        let staked_left = self.net_limit(&acct).saturating_sub(acct.net_usage);
        let fee = self.config.create_account_bandwidth_fee_sun;
        let a = self.account_mut(owner)?;
        if staked_left >= bytes {
            a.net_usage += bytes;
            Ok((bytes, 0))
        } else if a.balance >= fee {
            a.balance -= fee;
            Ok((0, fee))
        } else {
            Err(refuse(
                "BANDWITH_ERROR",
                "AccountResourceInsufficient error",
            ))
        }
    }
}
