//! The synchronous chain state behind `SimRail`: blocks, balances, the mempool and the
//! transfer log. Everything here runs under the rail's one mutex and never awaits.

use super::{Fault, SimCosts};
use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::ports::{ChainAddress, Inbound, SubmissionStatus};
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// One executed token movement, as the scanner sees it.
#[derive(Clone, Debug)]
pub(crate) struct Transfer {
    pub from: ChainAddress,
    pub to: ChainAddress,
    pub token: Token,
    pub amount: Micros,
    pub tx_hash: String,
    pub index: u32,
}

#[derive(Clone, Debug)]
enum Outcome {
    Pending,
    Executed {
        block: u64,
        /// The recipient leg's token account did not exist before (Solana rent paid).
        created_recipient_account: bool,
    },
    Failed {
        reason: String,
        /// A block included it and it reverted there (the service paid for it, like a
        /// real reverted transaction); `false` when it expired unincluded.
        landed: bool,
    },
}

/// A transaction the chain knows about (mempool or history).
#[derive(Clone, Debug)]
pub(crate) struct Tx {
    pub tx_hash: String,
    pub from: ChainAddress,
    pub token: Token,
    pub legs: Vec<(ChainAddress, Micros)>,
    /// Which leg is the payment's recipient (the one whose opened account is reported).
    pub recipient_leg: Option<usize>,
    /// Faucet deposits create supply: no source balance is checked or debited.
    pub mint: bool,
    /// Accepted, then reverts at execution (`Fault::Revert`).
    pub revert: bool,
    /// The first block that may include it.
    pub execute_at: u64,
    /// The payment's deadline (Unix ms): never included once the chain's clock is past
    /// it.
    pub valid_until: Option<i64>,
}

impl Tx {
    fn total(&self) -> u64 {
        // Totals are validated to fit in a u64 before a tx is accepted.
        self.legs
            .iter()
            .map(|(_, a)| a.get())
            .fold(0u64, u64::saturating_add)
    }
}

/// The token accounts a transaction opened (Solana), closed again if it is undone.
type OpenedAccounts = Vec<(ChainAddress, Token)>;

pub(crate) struct Chain {
    pub height: u64,
    pub rpc_down: bool,
    pub sponsor_funded: bool,
    pub monitoring: bool,
    pub faults: VecDeque<Fault>,
    /// Distinct payments the node accepted.
    pub accepted: usize,
    /// Sequence of outside transfers (mints and external payers), for their hashes.
    pub external_seq: u64,
    /// Whether token accounts are tracked (Solana associated token accounts).
    track_token_accounts: bool,
    token_accounts: BTreeSet<(ChainAddress, Token)>,
    balances: BTreeMap<(ChainAddress, Token), u64>,
    blocks: BTreeMap<u64, Vec<Transfer>>,
    /// Per block, the transactions it executed in order, each with the token accounts it
    /// opened: what a reorganisation undoes.
    executed: BTreeMap<u64, Vec<(usize, OpenedAccounts)>>,
    txs: Vec<(Tx, Outcome)>,
    mempool: Vec<usize>,
    by_payment: BTreeMap<String, usize>,
}

impl Chain {
    pub fn new(track_token_accounts: bool) -> Self {
        Chain {
            height: 0,
            rpc_down: false,
            sponsor_funded: true,
            monitoring: true,
            faults: VecDeque::new(),
            accepted: 0,
            external_seq: 0,
            track_token_accounts,
            token_accounts: BTreeSet::new(),
            balances: BTreeMap::new(),
            blocks: BTreeMap::new(),
            executed: BTreeMap::new(),
            txs: Vec::new(),
            mempool: Vec::new(),
            by_payment: BTreeMap::new(),
        }
    }

    pub fn balance(&self, address: &ChainAddress, token: Token) -> Micros {
        Micros(
            self.balances
                .get(&(address.clone(), token))
                .copied()
                .unwrap_or(0),
        )
    }

    /// What is still in the mempool from this source in this token.
    pub fn pending_from(&self, address: &ChainAddress, token: Token) -> u64 {
        self.mempool
            .iter()
            .map(|i| &self.txs[*i].0)
            .filter(|tx| !tx.mint && tx.from == *address && tx.token == token)
            .map(Tx::total)
            .fold(0u64, u64::saturating_add)
    }

    pub fn tx_hash_of(&self, payment_id: &str) -> Option<&str> {
        self.by_payment
            .get(payment_id)
            .map(|i| self.txs[*i].0.tx_hash.as_str())
    }

    pub fn has_token_account(&self, address: &ChainAddress, token: Token) -> bool {
        !self.track_token_accounts || self.token_accounts.contains(&(address.clone(), token))
    }

    pub fn open_token_account(&mut self, address: &ChainAddress, token: Token) {
        if self.track_token_accounts {
            self.token_accounts.insert((address.clone(), token));
        }
    }

    /// Puts a transaction in the mempool, optionally under a payment id.
    pub fn enqueue(&mut self, payment_id: Option<&str>, tx: Tx) {
        let index = self.txs.len();
        self.txs.push((tx, Outcome::Pending));
        self.mempool.push(index);
        if let Some(id) = payment_id {
            self.by_payment.insert(id.to_string(), index);
        }
    }

    /// Mines `n` blocks at time `now` (Unix ms; `None`: a chain without a clock, where
    /// no deadline passes); returns the new head.
    pub fn mine(&mut self, n: u64, now: Option<i64>) -> u64 {
        for _ in 0..n {
            self.mine_one(now);
        }
        self.height
    }

    fn mine_one(&mut self, now: Option<i64>) {
        self.height += 1;
        let block = self.height;
        let mempool = std::mem::take(&mut self.mempool);
        for index in mempool {
            let tx = &self.txs[index].0;
            if let (Some(deadline), Some(now)) = (tx.valid_until, now)
                && now > deadline
            {
                // Past its deadline: no block may include it any more.
                self.txs[index].1 = Outcome::Failed {
                    reason: "expired: its deadline passed before it was included in a block".into(),
                    landed: false,
                };
            } else if tx.execute_at > block {
                self.mempool.push(index);
            } else {
                let outcome = self.execute(index, block);
                self.txs[index].1 = outcome;
            }
        }
    }

    /// Executes all legs or none.
    fn execute(&mut self, index: usize, block: u64) -> Outcome {
        let tx = self.txs[index].0.clone();
        if tx.revert {
            return Outcome::Failed {
                reason: "execution reverted".into(),
                landed: true,
            };
        }
        let mut updates: BTreeMap<(ChainAddress, Token), u64> = BTreeMap::new();
        if !tx.mint {
            let have = self.balance(&tx.from, tx.token).get();
            let Some(left) = have.checked_sub(tx.total()) else {
                return Outcome::Failed {
                    reason: "insufficient balance at execution".into(),
                    landed: true,
                };
            };
            updates.insert((tx.from.clone(), tx.token), left);
        }
        for (to, amount) in &tx.legs {
            let key = (to.clone(), tx.token);
            let current = match updates.get(&key) {
                Some(v) => *v,
                None => self.balance(to, tx.token).get(),
            };
            let Some(next) = current.checked_add(amount.get()) else {
                return Outcome::Failed {
                    reason: "recipient balance overflow".into(),
                    landed: true,
                };
            };
            updates.insert(key, next);
        }
        for (key, value) in updates {
            self.balances.insert(key, value);
        }
        let log = self.blocks.entry(block).or_default();
        for (i, (to, amount)) in tx.legs.iter().enumerate() {
            log.push(Transfer {
                from: tx.from.clone(),
                to: to.clone(),
                token: tx.token,
                amount: *amount,
                tx_hash: tx.tx_hash.clone(),
                index: u32::try_from(i).unwrap_or(u32::MAX),
            });
        }
        let created_recipient_account =
            tx.recipient_leg
                .and_then(|i| tx.legs.get(i))
                .is_some_and(|(to, _)| {
                    self.track_token_accounts && !self.has_token_account(to, tx.token)
                });
        let mut opened = Vec::new();
        for (to, _) in &tx.legs {
            // The sender (Solana: the service as fee payer) creates a missing account.
            if !self.has_token_account(to, tx.token) {
                opened.push((to.clone(), tx.token));
            }
            self.open_token_account(to, tx.token);
        }
        self.executed
            .entry(block)
            .or_default()
            .push((index, opened));
        Outcome::Executed {
            block,
            created_recipient_account,
        }
    }

    /// A reorganisation: the newest `depth` blocks are abandoned for a branch of
    /// `depth + 1` empty blocks, so the head moves on by one. Every transaction those
    /// blocks executed is undone (balances, opened token accounts) and goes back to the
    /// mempool ahead of what was waiting, in its order, as a node does with the
    /// transactions of the blocks it leaves; the next mined block includes them again
    /// (or fails them, if their deadline passed or their source no longer has the
    /// balance). Transactions that failed in those blocks stay failed, as if the new
    /// branch included them too. Returns the transactions sent back.
    pub fn reorg(&mut self, depth: u64) -> usize {
        let depth = depth.min(self.height);
        let first = self.height - depth + 1;
        let mut back = Vec::new();
        for block in (first..=self.height).rev() {
            self.blocks.remove(&block);
            let txs = self.executed.remove(&block).unwrap_or_default();
            for (index, opened) in txs.into_iter().rev() {
                self.undo(index);
                for account in opened {
                    self.token_accounts.remove(&account);
                }
                self.txs[index].1 = Outcome::Pending;
                back.push(index);
            }
        }
        back.reverse();
        let sent_back = back.len();
        back.append(&mut self.mempool);
        self.mempool = back;
        self.height = first - 1 + depth + 1;
        sent_back
    }

    /// Reverses an executed transaction's balance changes. The blocks after it were
    /// undone first, so every recipient still holds what it received.
    fn undo(&mut self, index: usize) {
        let tx = self.txs[index].0.clone();
        for (to, amount) in tx.legs.iter().rev() {
            let b = self.balances.entry((to.clone(), tx.token)).or_default();
            debug_assert!(*b >= amount.get(), "undo below zero");
            *b = b.saturating_sub(amount.get());
        }
        if !tx.mint {
            let b = self
                .balances
                .entry((tx.from.clone(), tx.token))
                .or_default();
            *b = b.saturating_add(tx.total());
        }
    }

    /// Confirmations of something executed at `block` (the block itself counts as one).
    pub fn confirmations_of(&self, block: u64) -> u64 {
        self.height.saturating_sub(block) + 1
    }

    /// What the chain knows of a payment; a confirmed one carries what landing it cost
    /// the service (`costs`, see [`SimCosts::of`]), one that reverted in a block what
    /// that cost ([`SimCosts::failed`]).
    pub fn status(
        &self,
        payment_id: &str,
        confirmations: u64,
        costs: &SimCosts,
    ) -> SubmissionStatus {
        let Some(index) = self.by_payment.get(payment_id) else {
            return SubmissionStatus::NotFound;
        };
        let (tx, outcome) = &self.txs[*index];
        match outcome {
            Outcome::Pending => SubmissionStatus::Pending {
                tx_hash: Some(tx.tx_hash.clone()),
            },
            Outcome::Executed {
                block,
                created_recipient_account,
            } if self.confirmations_of(*block) >= confirmations => SubmissionStatus::Confirmed {
                tx_hash: tx.tx_hash.clone(),
                block: *block,
                created_recipient_account: *created_recipient_account,
                cost: Some(costs.of(*created_recipient_account)),
            },
            Outcome::Executed { .. } => SubmissionStatus::Pending {
                tx_hash: Some(tx.tx_hash.clone()),
            },
            Outcome::Failed { reason, landed } => SubmissionStatus::Failed {
                reason: reason.clone(),
                tx_hash: Some(tx.tx_hash.clone()),
                cost: landed.then(|| costs.failed()),
            },
        }
    }

    /// Transfers to watched addresses (every transfer when `watched` is empty) in blocks
    /// after `cursor`. A block is the unit of
    /// progress: the batch stops before a block whose transfers would exceed `limit`,
    /// except that the first block with matches is always returned whole (so a block
    /// holding more than `limit` matches cannot stall the scanner). The returned cursor
    /// is the highest block such that it and every block before it in this scan were
    /// fully returned and confirmed.
    pub fn scan(
        &self,
        cursor: u64,
        watched: &BTreeSet<ChainAddress>,
        limit: usize,
        confirmations: u64,
    ) -> (Vec<Inbound>, u64) {
        let mut inbound = Vec::new();
        let mut next_cursor = cursor;
        let mut advancing = true;
        for block in cursor.saturating_add(1)..=self.height {
            let matches: Vec<&Transfer> = self
                .blocks
                .get(&block)
                .map(|log| {
                    log.iter()
                        .filter(|t| watched.is_empty() || watched.contains(&t.to))
                        .collect()
                })
                .unwrap_or_default();
            if !inbound.is_empty() && inbound.len() + matches.len() > limit {
                break;
            }
            let conf = self.confirmations_of(block);
            let confirmed = conf >= confirmations;
            inbound.extend(matches.into_iter().map(|t| Inbound {
                tx_hash: t.tx_hash.clone(),
                index: t.index,
                from: t.from.clone(),
                to: t.to.clone(),
                token: t.token,
                amount: t.amount,
                block,
                confirmations: conf,
                confirmed,
            }));
            advancing &= confirmed;
            if advancing {
                next_cursor = block;
            }
        }
        (inbound, next_cursor)
    }
}
