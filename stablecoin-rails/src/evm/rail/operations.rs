//! Building, sponsoring and signing a payment's user operation, and reading its fate
//! back from the EntryPoint's logs (`UserOperationEvent`, the revert reason beside it).

use super::{
    SALT, parse_address, rejected, transfer_topic, unavailable, user_op_event_topic,
    user_op_revert_topic,
};
use crate::evm::rpc::{Log, address_topic, hex0x};
use crate::evm::userop::{
    Call, Nonce, Sponsorship, UserOp, erc20_transfer_call, execute_batch_call,
};
use crate::evm::{EvmAddress, EvmRail, abi};
use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::ports::{
    Curve, KeyPurpose, RailError, RailPayment, Signer, SponsorCost, SubmissionStatus,
};

/// A secp256k1 signature as Solidity's `ECDSA.recover` takes it (v = 27/28).
async fn sign_for_evm(
    signer: &dyn Signer,
    purpose: &KeyPurpose,
    digest: &[u8; 32],
) -> Result<Vec<u8>, RailError> {
    let mut sig = signer
        .sign(purpose, Curve::Secp256k1, digest)
        .await
        .map_err(|e| RailError::Unavailable {
            reason: format!("signer: {e}"),
        })?
        .0;
    if sig.len() != 65 {
        return Err(RailError::Unavailable {
            reason: "signer returned a malformed secp256k1 signature".into(),
        });
    }
    if sig[64] < 27 {
        sig[64] += 27;
    }
    Ok(sig)
}

/// What a user operation cost its sponsor: the `actualGasCost` of its
/// `UserOperationEvent(userOpHash, sender, paymaster, nonce, success, actualGasCost,
/// actualGasUsed)` (third data word), in wei. The EntryPoint takes exactly this from the
/// paymaster's deposit (the rail's operations are all sponsored); it is the figure
/// `eth_getUserOperationReceipt` reports as `actualGasCost` too, so the self-bundled and
/// the external-bundler paths read the same number from the same log. Why not the bundle
/// transaction's fee: a bundle may carry several operations, and that fee is the
/// bundler's (when the service bundles itself, the EntryPoint pays the operations'
/// `actualGasCost` to it as the beneficiary, so what leaves the service in the end is
/// the deposit's loss, give or take the bundler's margin). An operation whose calls
/// reverted (`success = false`) is charged the same way, so its `Failed` carries this
/// too. `None` when the log is too short or the figure exceeds 128 bits (no real
/// chain's).
pub(super) fn user_op_cost(event: &Log) -> Option<SponsorCost> {
    let native = abi::word(&event.data, 2).and_then(|w| abi::word_u128(&w))?;
    Some(SponsorCost {
        native,
        energy: 0,
        bandwidth: 0,
    })
}

impl EvmRail {
    /// The `UserOperationEvent` of an operation since `from_block`, and the revert reason
    /// logged beside it when it failed.
    pub(super) async fn find_event(
        &self,
        topic: (usize, [u8; 32]),
        from_block: u64,
        head: u64,
    ) -> Result<Option<(Log, Option<String>)>, RailError> {
        let mut topics = vec![Some(vec![user_op_event_topic()]), None, None];
        topics[topic.0] = Some(vec![topic.1]);
        let logs = self
            .eth()
            .logs(from_block, head, &[self.config.entry_point], &topics)
            .await
            .map_err(|e| unavailable("eth_getLogs", e))?;
        let Some(event) = logs.into_iter().next() else {
            return Ok(None);
        };
        let reason = self.revert_reason_of(&event).await?;
        Ok(Some((event, reason)))
    }

    pub(super) async fn revert_reason_of(&self, event: &Log) -> Result<Option<String>, RailError> {
        let success = abi::word(&event.data, 1).is_some_and(|w| w[31] == 1);
        if success {
            return Ok(None);
        }
        let logs = self
            .eth()
            .logs(
                event.block,
                event.block,
                &[self.config.entry_point],
                &[
                    Some(vec![user_op_revert_topic()]),
                    Some(vec![event.topics[1]]),
                ],
            )
            .await
            .map_err(|e| unavailable("eth_getLogs", e))?;
        Ok(Some(
            match logs.first().and_then(|l| abi::dynamic_bytes(&l.data, 1)) {
                Some(data) => call_revert_reason(&data),
                None => "the operation's calls reverted".into(),
            },
        ))
    }

    pub(super) fn judge(&self, event: &Log, reason: Option<String>, head: u64) -> SubmissionStatus {
        let tx_hash = hex0x(&event.tx_hash);
        if let Some(reason) = reason {
            // Reverted in execution after validation passed: the EntryPoint still took
            // the operation's `actualGasCost` from the paymaster's deposit.
            return SubmissionStatus::Failed {
                reason,
                tx_hash: Some(tx_hash),
                cost: user_op_cost(event),
            };
        }
        if head + 1 - event.block.min(head) >= self.config.confirmations {
            SubmissionStatus::Confirmed {
                tx_hash,
                block: event.block,
                created_recipient_account: false,
                cost: user_op_cost(event),
            }
        } else {
            SubmissionStatus::Pending {
                tx_hash: Some(tx_hash),
            }
        }
    }

    /// A payment's legs as ERC-20 transfer calls (zero legs left out), and the call gas
    /// they need: [`GasPolicy::call_gas_base`](crate::evm::GasPolicy) plus
    /// `call_gas_per_transfer` each.
    pub(super) fn transfer_calls(
        &self,
        payment: &RailPayment,
    ) -> Result<(Vec<Call>, u128), RailError> {
        let token = self.token(payment.token)?;
        let mut calls = Vec::new();
        for leg in payment.legs.iter().filter(|l| !l.amount.is_zero()) {
            let to = parse_address(&leg.to)?;
            calls.push(Call {
                target: token.address,
                data: erc20_transfer_call(&to, token.base_units(leg.amount)),
            });
        }
        if calls.is_empty() {
            return Err(rejected("a payment needs at least one leg with an amount"));
        }
        let g = self.config.gas;
        let gas = g.call_gas_base + calls.len() as u128 * g.call_gas_per_transfer;
        Ok((calls, gas))
    }

    /// The unsigned operation of `calls` from `sender` (deployed by its `initCode` when
    /// not yet on chain), nonce-keyed by `id`.
    pub(super) async fn build(
        &self,
        id: &str,
        calls: &[Call],
        call_gas: u128,
        sender: EvmAddress,
        owner: EvmAddress,
    ) -> Result<UserOp, RailError> {
        let deployed = self
            .deploying
            .lock()
            .map(|d| d.contains(&sender))
            .unwrap_or(false)
            || !self
                .eth()
                .code(&sender)
                .await
                .map_err(|e| unavailable("eth_getCode", e))?
                .is_empty();
        let g = self.config.gas;
        let fees = self.fees().await?;
        Ok(UserOp {
            sender,
            nonce: Nonce {
                key: Nonce::key_for(id),
                seq: 0,
            },
            init_code: if deployed {
                Vec::new()
            } else {
                self.factory.init_code(&owner, SALT)
            },
            call_data: execute_batch_call(calls),
            verification_gas_limit: if deployed {
                g.verification_gas
            } else {
                g.deploy_verification_gas
            },
            call_gas_limit: call_gas,
            pre_verification_gas: g.pre_verification_gas,
            max_priority_fee_per_gas: fees.priority,
            max_fee_per_gas: fees.max_fee,
            paymaster_and_data: Vec::new(),
            signature: Vec::new(),
        })
        .and_then(|op| self.within_payment_ceiling(op))
    }

    /// The fees an operation built now gets: from `eth_feeHistory`, within the chain's
    /// floors and ceilings ([`crate::evm::fees`]).
    pub async fn fees(&self) -> Result<crate::evm::Fees, RailError> {
        crate::evm::fees::estimate(&self.eth(), &self.config.fees)
            .await
            .map_err(|e| unavailable("fee estimation", e))
    }

    /// `op`, unless its gas limits at its max fee could cost more than the chain's
    /// per-payment ceiling: then refused, before anything is journaled or sent.
    fn within_payment_ceiling(&self, op: UserOp) -> Result<UserOp, RailError> {
        let Some(ceiling) = self.config.fees.max_gas_cost_per_payment_wei else {
            return Ok(op);
        };
        let gas = op.verification_gas_limit
            + op.call_gas_limit
            + op.pre_verification_gas
            + self.config.gas.paymaster_verification_gas;
        let cost = gas.saturating_mul(op.max_fee_per_gas);
        if cost > ceiling {
            return Err(rejected(format!(
                "gas too expensive: up to {gas} gas at {} wei per gas could cost {cost} wei, \
                 above this chain's per-payment ceiling of {ceiling} wei \
                 (max_gas_cost_per_payment_wei)",
                op.max_fee_per_gas
            )));
        }
        Ok(op)
    }

    /// Sponsors (paymaster signature) and signs (owner) an operation. `valid_until` (Unix
    /// seconds, 0 = none) goes into the sponsorship the service signs: the EntryPoint
    /// refuses the operation in any block whose timestamp is past it (`AA32 paymaster
    /// expired or not due`), which is what makes a payment's deadline enforceable here.
    pub(super) async fn sponsor_and_sign(
        &self,
        op: &mut UserOp,
        purpose: &KeyPurpose,
        valid_until: u64,
    ) -> Result<[u8; 32], RailError> {
        let sponsorship = Sponsorship {
            paymaster: self.config.paymaster,
            verification_gas_limit: self.config.gas.paymaster_verification_gas,
            post_op_gas_limit: 0,
            valid_until,
            valid_after: 0,
        };
        let digest = op.paymaster_digest(&sponsorship, self.config.chain_id);
        let pm_sig = sign_for_evm(&*self.signer, &KeyPurpose::Sponsor, &digest).await?;
        op.paymaster_and_data = sponsorship.encode(&pm_sig);
        let hash = op.hash(&self.config.entry_point, self.config.chain_id);
        op.signature = sign_for_evm(&*self.signer, purpose, &hash).await?;
        Ok(hash)
    }
    /// How much of ERC-20 `token` (base units) the account of operation `id` received
    /// in that operation's own execution: the token's `Transfer` logs to the account
    /// between the operation's start (the EntryPoint's `BeforeExecution`, or the previous
    /// operation's `UserOperationEvent`) and its own `UserOperationEvent` in the bundle's
    /// receipt, so another operation of the same bundle never counts. `None` while no
    /// receipt holds the operation's event (unknown id, not sent, not mined).
    pub async fn received_base(
        &self,
        id: &str,
        token: &EvmAddress,
    ) -> Result<Option<u128>, RailError> {
        let Some(s) = self.lookup(id).await?.filter(|s| !s.rejected) else {
            return Ok(None);
        };
        let Some(tx) = s.tx_hash else {
            return Ok(None);
        };
        let Some(receipt) = self
            .eth()
            .receipt(&tx)
            .await
            .map_err(|e| unavailable("eth_getTransactionReceipt", e))?
        else {
            return Ok(None);
        };
        let from_entry_point = |l: &Log, topic: [u8; 32]| {
            l.address == self.config.entry_point && l.topics.first() == Some(&topic)
        };
        let Some(end) = receipt.logs.iter().position(|l| {
            from_entry_point(l, user_op_event_topic()) && l.topics.get(1) == Some(&s.user_op_hash)
        }) else {
            return Ok(None);
        };
        let start = receipt.logs[..end]
            .iter()
            .rposition(|l| {
                from_entry_point(l, user_op_event_topic())
                    || from_entry_point(l, abi::keccak(b"BeforeExecution()"))
            })
            .map_or(0, |i| i + 1);
        let to = address_topic(&s.sender);
        let mut total: u128 = 0;
        for l in &receipt.logs[start..end] {
            if l.address == *token
                && l.topics.len() == 3
                && l.topics[0] == transfer_topic()
                && l.topics[2] == to
            {
                let amount = abi::word(&l.data, 0)
                    .and_then(|w| abi::word_u128(&w))
                    .ok_or_else(|| rejected("a Transfer amount above 2^128"))?;
                total = total
                    .checked_add(amount)
                    .ok_or_else(|| rejected("received amounts overflow 2^128"))?;
            }
        }
        Ok(Some(total))
    }

    /// [`received_base`](Self::received_base) of the chain's `token`, in micro-units
    /// rounded down.
    pub async fn received(&self, id: &str, token: Token) -> Result<Option<Micros>, RailError> {
        let t = self.token(token)?;
        match self.received_base(id, &t.address).await? {
            None => Ok(None),
            Some(base) => t
                .micros(base)
                .map(Some)
                .ok_or_else(|| rejected("the amount received does not fit in micro-units")),
        }
    }

    pub(super) async fn find_event_by_nonce(
        &self,
        sender: &EvmAddress,
        nonce: &[u8; 32],
    ) -> Result<Option<Log>, RailError> {
        let head = self
            .eth()
            .block_number()
            .await
            .map_err(|e| unavailable("eth_blockNumber", e))?;
        let logs = self
            .eth()
            .logs(
                self.config.scan_start_block,
                head,
                &[self.config.entry_point],
                &[
                    Some(vec![user_op_event_topic()]),
                    None,
                    Some(vec![address_topic(sender)]),
                ],
            )
            .await
            .map_err(|e| unavailable("eth_getLogs", e))?;
        Ok(logs
            .into_iter()
            .find(|l| abi::word(&l.data, 0).as_ref() == Some(nonce)))
    }
}

/// A deadline as a user operation's `validUntil`: Unix seconds, rounded down
/// (so the chain's deadline is never later than the payment's), within the 48 bits the
/// field holds; 0 (no limit) only without a deadline. A deadline at or
/// before the epoch becomes 1: already expired, never "no limit".
pub fn valid_until_secs(valid_until: Option<Timestamp>) -> u64 {
    const MAX: i64 = (1 << 48) - 1;
    valid_until.map_or(0, |t| t.unix_secs().clamp(1, MAX) as u64)
}

/// The reason of a reverted `executeBatch`: `ExecuteError(uint256 index, bytes error)`
/// wraps the failing call's own revert.
pub fn call_revert_reason(data: &[u8]) -> String {
    if data.len() > 4 && data[..4] == abi::selector("ExecuteError(uint256,bytes)") {
        let body = &data[4..];
        let index = abi::word(body, 0)
            .and_then(|w| abi::word_u128(&w))
            .unwrap_or(0);
        let inner = abi::dynamic_bytes(body, 1).unwrap_or_default();
        return format!(
            "call {index} of the batch reverted: {}",
            abi::revert_reason(&inner)
        );
    }
    abi::revert_reason(data)
}

#[cfg(test)]
mod tests {
    use super::super::{Submitted, transfer_topic, user_op_event_topic};
    use crate::evm::abi::{self, keccak};
    use crate::evm::rpc::{address_topic, hex0x};
    use crate::evm::{EvmAddress, EvmConfig, EvmRail, EvmToken, JsonRpc, RpcError, SelfBundler};
    use serde_json::{Value, json};
    use stablecoin_core::domain::money::{Micros, Token};
    use stablecoin_core::memory::LocalSigner;
    use stablecoin_core::ports::KeyPurpose;
    use std::sync::Arc;

    const ENTRY_POINT: EvmAddress = EvmAddress([0xe0; 20]);
    const USDT: EvmAddress = EvmAddress([0x77; 20]);
    const ACCOUNT: EvmAddress = EvmAddress([0xaa; 20]);
    const TX: [u8; 32] = [0x42; 32];

    /// A node that knows one bundle: its receipt, with the logs given.
    struct OneReceipt(Vec<Value>);

    #[async_trait::async_trait]
    impl JsonRpc for OneReceipt {
        async fn request(&self, method: &str, _params: Value) -> Result<Value, RpcError> {
            assert_eq!(method, "eth_getTransactionReceipt");
            Ok(json!({"status": "0x1", "blockNumber": "0x10", "logs": self.0}))
        }
    }

    fn log(address: &EvmAddress, topics: &[[u8; 32]], data: &[u8], index: u64) -> Value {
        json!({
            "address": address.to_hex(),
            "topics": topics.iter().map(|t| hex0x(t)).collect::<Vec<_>>(),
            "data": hex0x(data),
            "blockNumber": "0x10",
            "transactionHash": hex0x(&TX),
            "logIndex": format!("0x{index:x}"),
        })
    }

    fn transfer(from: &EvmAddress, to: &EvmAddress, amount: u128, i: u64) -> Value {
        let topics = [transfer_topic(), address_topic(from), address_topic(to)];
        log(&USDT, &topics, &abi::uint_word(amount), i)
    }

    fn op_event(hash: [u8; 32], i: u64) -> Value {
        let topics = [
            user_op_event_topic(),
            hash,
            address_topic(&ACCOUNT),
            [0; 32],
        ];
        log(&ENTRY_POINT, &topics, &[0; 128], i)
    }

    #[tokio::test]
    async fn received_counts_only_the_operations_own_transfers_to_the_account() {
        let (op_a, op_b) = ([0xa1; 32], [0xb2; 32]);
        let pair = EvmAddress([0x99; 20]);
        // One bundle, two operations of the same account (two nonce keys): A receives 5
        // and 2, B receives 7; a transfer to someone else and one of another token too.
        let logs = vec![
            log(&ENTRY_POINT, &[keccak(b"BeforeExecution()")], &[], 0),
            transfer(&pair, &ACCOUNT, 5, 1),
            transfer(&pair, &EvmAddress([0x11; 20]), 100, 2),
            log(
                &EvmAddress([0x55; 20]),
                &[
                    transfer_topic(),
                    address_topic(&pair),
                    address_topic(&ACCOUNT),
                ],
                &abi::uint_word(1_000),
                3,
            ),
            transfer(&pair, &ACCOUNT, 2, 4),
            op_event(op_a, 5),
            transfer(&pair, &ACCOUNT, 7, 6),
            op_event(op_b, 7),
        ];
        let rpc: Arc<dyn JsonRpc> = Arc::new(OneReceipt(logs));
        let signer = Arc::new(LocalSigner::from_seed([3; 32]));
        let mut config = EvmConfig::new(137, ENTRY_POINT, EvmAddress([1; 20]), EvmAddress([2; 20]));
        config.usdt = Some(EvmToken {
            address: USDT,
            decimals: 6,
        });
        let bundler = Arc::new(SelfBundler::new(
            rpc.clone(),
            signer.clone(),
            KeyPurpose::Sponsor,
            ENTRY_POINT,
            137,
        ));
        let rail = EvmRail::new(config, rpc, signer, bundler).expect("config");
        for (id, hash) in [("sw_a", op_a), ("sw_b", op_b), ("sw_c", [0xc3; 32])] {
            let s = Submitted {
                sender: ACCOUNT,
                user_op_hash: hash,
                tx_hash: Some(TX),
                from_block: 1,
                rejected: false,
                sent: true,
                valid_until: None,
                op: None,
            };
            rail.remember(id, s).await.expect("journal");
        }
        assert_eq!(rail.received_base("sw_a", &USDT).await, Ok(Some(7)));
        assert_eq!(
            rail.received("sw_b", Token::Usdt).await,
            Ok(Some(Micros(7)))
        );
        // An operation the bundle does not carry: nothing known, not zero.
        assert_eq!(rail.received_base("sw_c", &USDT).await, Ok(None));
        assert_eq!(rail.received_base("sw_unknown", &USDT).await, Ok(None));
    }

    #[test]
    fn the_cost_is_the_events_actual_gas_cost_in_wei() {
        use crate::evm::rpc::Log;
        let mut data = Vec::new();
        data.extend(abi::uint_word(9)); // nonce
        data.extend(abi::uint_word(1)); // success
        data.extend(abi::uint_word(123_456_789_000)); // actualGasCost
        data.extend(abi::uint_word(80_000)); // actualGasUsed
        let mut event = Log {
            address: ENTRY_POINT,
            topics: vec![user_op_event_topic()],
            data,
            block: 1,
            tx_hash: TX,
            log_index: 0,
        };
        let cost = super::user_op_cost(&event).expect("a cost");
        assert_eq!(
            (cost.native, cost.energy, cost.bandwidth),
            (123_456_789_000, 0, 0)
        );
        // A figure past 128 bits, or a truncated log: no cost rather than a wrong one.
        event.data[64] = 1;
        assert_eq!(super::user_op_cost(&event), None);
        event.data.truncate(64);
        assert_eq!(super::user_op_cost(&event), None);
    }
}
