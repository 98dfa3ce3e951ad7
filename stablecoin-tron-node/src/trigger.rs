//! TriggerSmartContract: the Energy limit and its sources, execution on the native
//! ledger or on Anvil, and the TRC-20 call and log encodings.

use crate::Addr;
use crate::address::{addr_from_bytes, evm, from_evm};
use crate::chain::{Chain, Refusal, refuse, validate_err};
use crate::pb::{self, MAX_FEE_LIMIT};
use prost::Message;
use serde_json::{Value, json};
use sha2::Digest;
use sha3::Keccak256;

impl Chain {
    pub(crate) async fn trigger(
        &mut self,
        owner: &Addr,
        param: &[u8],
        fee_limit: i64,
        size: u64,
        _txid: &[u8; 32],
    ) -> Result<(Value, &'static str), Refusal> {
        let c = pb::Trigger::decode(param).map_err(|e| validate_err(e.to_string()))?;
        let contract = addr_from_bytes(&c.contract_address)
            .ok_or_else(|| validate_err("Invalid contract address"))?;
        if !self.tokens().contains(&contract) {
            return Err(validate_err("No contract or not a smart contract"));
        }
        if !(0..=MAX_FEE_LIMIT).contains(&fee_limit) {
            return Err(validate_err(format!(
                "feeLimit must be >= 0 and <= {MAX_FEE_LIMIT}"
            )));
        }
        if c.call_value != 0 {
            return Err(validate_err("callValue to a non-payable token contract"));
        }
        let (net_usage, net_fee) = self.consume_bandwidth(owner, size)?;

        let acct = self.accounts[owner].clone();
        let price = self.config.energy_price_sun;
        let stake_left = self.energy_limit(&acct).saturating_sub(acct.energy_usage);
        let limit = (stake_left + acct.balance / price).min(fee_limit as u64 / price);
        let out_of_energy = |needed: String| {
            Some(format!(
                "Not enough energy for 'SSTORE' operation executing: curInvokeEnergyLimit[{limit}], curOpEnergy[{needed}], usedEnergy[{limit}]"
            ))
        };
        let forced_revert = std::mem::take(&mut self.revert_next_trigger);
        let (used, result, res_message, logs) = match self.evm.clone() {
            _ if forced_revert => {
                // Injected fault: the token reverts (as a blacklisted sender would).
                let needed = 1_200;
                if needed > limit {
                    (
                        limit,
                        "OUT_OF_ENERGY",
                        out_of_energy(needed.to_string()),
                        vec![],
                    )
                } else {
                    (
                        needed,
                        "REVERT",
                        Some("REVERT opcode executed".to_string()),
                        vec![],
                    )
                }
            }
            None => {
                // The native ledger: transfer(address,uint256) only, fixed costs.
                enum Effect {
                    Transfer(Addr, u128),
                    Revert,
                }
                let effect = if c.data.len() == 68 && c.data[..4] == [0xa9, 0x05, 0x9c, 0xbb] {
                    let to = from_evm(&c.data[16..36]);
                    let amount = u128::from_be_bytes(c.data[52..68].try_into().unwrap());
                    if c.data[36..52].iter().any(|b| *b != 0)
                        || c.data[4..16].iter().any(|b| *b != 0)
                        || self.token_balance_of(&contract, owner).await < amount
                    {
                        Effect::Revert
                    } else {
                        Effect::Transfer(to, amount)
                    }
                } else {
                    Effect::Revert
                };
                let needed: u64 = match &effect {
                    Effect::Transfer(to, _)
                        if self.token_balance_of(&contract, to).await == 0 && to != owner =>
                    {
                        29_650
                    }
                    Effect::Transfer(..) => 14_650,
                    Effect::Revert => 1_200,
                };
                if needed > limit {
                    (
                        limit,
                        "OUT_OF_ENERGY",
                        out_of_energy(needed.to_string()),
                        vec![],
                    )
                } else {
                    match effect {
                        Effect::Transfer(to, amount) => {
                            *self.token.entry((contract, *owner)).or_default() -= amount;
                            *self.token.entry((contract, to)).or_default() += amount;
                            let log = transfer_log(&contract, owner, &to, amount);
                            (needed, "SUCCESS", None, vec![log])
                        }
                        Effect::Revert => (
                            needed,
                            "REVERT",
                            Some("REVERT opcode executed".to_string()),
                            vec![],
                        ),
                    }
                }
            }
            Some(evm) => {
                // The token's bytecode on Anvil, with the Energy limit as gas above the
                // intrinsic gas (which TRON does not charge).
                let intrinsic = intrinsic_gas(&c.data);
                let gas = intrinsic + limit.min(10_000_000);
                let r = evm
                    .send(&evm_of(owner), &evm_of(&contract), &c.data, gas)
                    .await
                    .map_err(|e| refuse("OTHER_ERROR", format!("other error : {e}")))?;
                let spent = r.gas_used.saturating_sub(intrinsic);
                if r.success {
                    (spent, "SUCCESS", None, r.logs)
                } else if r.gas_used >= gas {
                    (limit, "OUT_OF_ENERGY", out_of_energy("?".into()), vec![])
                } else {
                    (
                        spent,
                        "REVERT",
                        Some("REVERT opcode executed".to_string()),
                        vec![],
                    )
                }
            }
        };
        let from_stake = used.min(stake_left);
        let burnt = (used - from_stake) * price;
        let a = self.account_mut(owner)?;
        a.energy_usage += from_stake;
        a.balance -= burnt.min(a.balance);
        let mut receipt = json!({
            "energy_usage_total": used,
            "result": result,
        });
        if from_stake > 0 {
            receipt["energy_usage"] = json!(from_stake);
        }
        if burnt > 0 {
            receipt["energy_fee"] = json!(burnt);
        }
        if net_usage > 0 {
            receipt["net_usage"] = json!(net_usage);
        }
        if net_fee > 0 {
            receipt["net_fee"] = json!(net_fee);
        }
        let mut info = json!({
            "contract_address": hex::encode(contract),
            "receipt": receipt,
            "contractResult": [if result == "SUCCESS" { format!("{:064x}", 1) } else { String::new() }],
            "log": logs,
        });
        if burnt + net_fee > 0 {
            info["fee"] = json!(burnt + net_fee);
        }
        if result != "SUCCESS" {
            info["result"] = json!("FAILED");
            if let Some(m) = res_message {
                info["resMessage"] = json!(hex::encode(m));
            }
        }
        Ok((info, result))
    }
}

pub(crate) fn plain_info(fee: u64, net_usage: u64, net_fee: u64) -> Value {
    let mut receipt = json!({});
    if net_usage > 0 {
        receipt["net_usage"] = json!(net_usage);
    }
    if net_fee > 0 {
        receipt["net_fee"] = json!(net_fee);
    }
    let mut info = json!({"contractResult": [""], "receipt": receipt});
    if fee > 0 {
        info["fee"] = json!(fee);
    }
    info
}

pub(crate) fn transfer_log(contract: &Addr, from: &Addr, to: &Addr, amount: u128) -> Value {
    let topic0 = hex::encode(Keccak256::digest(b"Transfer(address,address,uint256)"));
    json!({
        "address": hex::encode(evm(contract)),
        "topics": [
            topic0,
            format!("{:0>64}", hex::encode(evm(from))),
            format!("{:0>64}", hex::encode(evm(to))),
        ],
        "data": format!("{amount:064x}"),
    })
}

pub(crate) fn evm_of(a: &Addr) -> [u8; 20] {
    evm(a)
}

pub(crate) fn word(v: u128) -> [u8; 32] {
    let mut w = [0u8; 32];
    w[16..].copy_from_slice(&v.to_be_bytes());
    w
}

pub(crate) fn transfer_call(to: &Addr, amount: u128) -> Vec<u8> {
    let mut d = hex::decode("a9059cbb").unwrap();
    d.extend_from_slice(&[0u8; 12]);
    d.extend_from_slice(&evm(to));
    d.extend_from_slice(&word(amount));
    d
}

/// EVM intrinsic gas (Istanbul): 21 000 + 4 per zero and 16 per non-zero calldata byte.
pub(crate) fn intrinsic_gas(data: &[u8]) -> u64 {
    21_000
        + data
            .iter()
            .map(|b| if *b == 0 { 4 } else { 16 })
            .sum::<u64>()
}
