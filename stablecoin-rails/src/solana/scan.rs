//! Pure half of the inbound scanner: token deposits out of a transaction's
//! `preTokenBalances` / `postTokenBalances`, and the scan cursor.

use super::rpc::{TokenBalance, TransactionDetails};
use solana_pubkey::Pubkey;
use stablecoin_core::domain::money::Token;
use std::collections::BTreeMap;

/// One token credit found in a transaction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenCredit {
    /// Index of the credited token account in the transaction's account keys (stable
    /// and unique within the transaction: the deposit's `index`).
    pub account_index: u32,
    /// The configured token whose mint was credited.
    pub token: Token,
    /// Owner of the credited token account (the recipient wallet).
    pub to_owner: Pubkey,
    /// Owner of the most-debited account of the same mint in this transaction (the
    /// sender), or the mint itself for a mint-to.
    pub from: Pubkey,
    /// Base units.
    pub amount: u64,
}

/// Every credit of a configured mint in a successful transaction: a token account whose
/// balance grew (a missing pre-balance counts as 0: the account was created in it).
/// Failed transactions credit nothing.
pub fn credits_of(details: &TransactionDetails, mints: &[(Token, Pubkey)]) -> Vec<TokenCredit> {
    if details.err.is_some() {
        return Vec::new();
    }
    let index = |list: &[TokenBalance]| -> BTreeMap<u32, TokenBalance> {
        list.iter().map(|b| (b.account_index, b.clone())).collect()
    };
    let pre = index(&details.pre_token_balances);
    let post = index(&details.post_token_balances);
    let mut out = Vec::new();
    for (token, mint) in mints {
        // Net change per account of this mint.
        let mut deltas: BTreeMap<u32, (i128, Option<Pubkey>)> = BTreeMap::new();
        for (i, b) in post.iter().filter(|(_, b)| &b.mint == mint) {
            deltas.entry(*i).or_insert((0, b.owner)).0 += i128::from(b.amount);
        }
        for (i, b) in pre.iter().filter(|(_, b)| &b.mint == mint) {
            let e = deltas.entry(*i).or_insert((0, b.owner));
            e.0 -= i128::from(b.amount);
            if e.1.is_none() {
                e.1 = b.owner;
            }
        }
        let sender = deltas
            .iter()
            .filter(|(_, (d, _))| *d < 0)
            .min_by_key(|(i, (d, _))| (*d, **i))
            .and_then(|(_, (_, owner))| *owner)
            .unwrap_or(*mint);
        for (i, (d, owner)) in &deltas {
            let (Some(owner), Ok(amount)) = (owner, u64::try_from(*d)) else {
                continue;
            };
            if amount == 0 {
                continue;
            }
            out.push(TokenCredit {
                account_index: *i,
                token: *token,
                to_owner: *owner,
                from: sender,
                amount,
            });
        }
    }
    out.sort_by_key(|c| c.account_index);
    out
}

/// The scan cursor: the last finalized slot whose transactions were all returned.
/// `""` (the engine's first call) starts at `start_slot`.
pub fn parse_cursor(cursor: &str, start_slot: u64) -> Result<u64, String> {
    if cursor.is_empty() {
        return Ok(start_slot);
    }
    cursor
        .parse::<u64>()
        .map_err(|_| format!("invalid scan cursor {cursor:?}: expected a slot number"))
}

/// Which slots a bounded scan step returns: slot-sorted entries are taken whole slot by
/// whole slot until `limit` is reached (a slot is never split, so the cursor can move
/// past it). Returns how many entries to take and the next cursor.
pub fn cut_at_limit(slots: &[u64], limit: usize, head: u64) -> (usize, u64) {
    if slots.len() <= limit.max(1) {
        return (slots.len(), head);
    }
    let limit = limit.max(1);
    let mut taken = 0;
    while taken < slots.len() {
        let slot = slots[taken];
        let end = taken + slots[taken..].iter().take_while(|s| **s == slot).count();
        if taken > 0 && end > limit {
            return (taken, slots[taken - 1]);
        }
        taken = end;
        if taken >= limit {
            break;
        }
    }
    let next = if taken < slots.len() {
        slots[taken - 1]
    } else {
        head
    };
    (taken, next)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tb(i: u32, mint: Pubkey, owner: Pubkey, amount: u64) -> TokenBalance {
        TokenBalance {
            account_index: i,
            mint,
            owner: Some(owner),
            amount,
            decimals: 6,
        }
    }

    #[test]
    fn credits_come_from_balance_deltas() {
        let usdc = Pubkey::new_from_array([9; 32]);
        let usdt = Pubkey::new_from_array([8; 32]);
        let other = Pubkey::new_from_array([7; 32]);
        let alice = Pubkey::new_from_array([1; 32]);
        let bob = Pubkey::new_from_array([2; 32]);
        let carol = Pubkey::new_from_array([3; 32]);
        let details = TransactionDetails {
            slot: 5,
            block_time: None,
            err: None,
            fee: 10_000,
            account_keys: vec![],
            pre_balances: vec![],
            post_balances: vec![],
            pre_token_balances: vec![tb(2, usdc, alice, 100), tb(5, other, alice, 9)],
            // bob's account (3) is created in this tx: no pre balance.
            post_token_balances: vec![
                tb(2, usdc, alice, 30),
                tb(3, usdc, bob, 60),
                tb(4, usdc, carol, 10),
                tb(5, other, bob, 10),
            ],
        };
        let mints = [(Token::Usdc, usdc), (Token::Usdt, usdt)];
        let credits = credits_of(&details, &mints);
        assert_eq!(
            credits,
            vec![
                TokenCredit {
                    account_index: 3,
                    token: Token::Usdc,
                    to_owner: bob,
                    from: alice,
                    amount: 60
                },
                TokenCredit {
                    account_index: 4,
                    token: Token::Usdc,
                    to_owner: carol,
                    from: alice,
                    amount: 10
                },
            ]
        );
        let failed = TransactionDetails {
            err: Some(serde_json::json!("AccountInUse")),
            ..details
        };
        assert!(credits_of(&failed, &mints).is_empty());
    }

    #[test]
    fn mint_to_credits_come_from_the_mint() {
        let usdc = Pubkey::new_from_array([9; 32]);
        let bob = Pubkey::new_from_array([2; 32]);
        let details = TransactionDetails {
            slot: 1,
            block_time: None,
            err: None,
            fee: 5000,
            account_keys: vec![],
            pre_balances: vec![],
            post_balances: vec![],
            pre_token_balances: vec![],
            post_token_balances: vec![tb(1, usdc, bob, 7)],
        };
        let c = credits_of(&details, &[(Token::Usdc, usdc)]);
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].from, usdc);
    }

    #[test]
    fn cursor_parses() {
        assert_eq!(parse_cursor("", 42), Ok(42));
        assert_eq!(parse_cursor("7", 42), Ok(7));
        assert!(parse_cursor("-1", 0).is_err());
        assert!(parse_cursor("x", 0).is_err());
    }

    #[test]
    fn limits_cut_between_slots() {
        // Everything fits: the cursor jumps to the head.
        assert_eq!(cut_at_limit(&[3, 4, 4], 5, 10), (3, 10));
        assert_eq!(cut_at_limit(&[], 5, 10), (0, 10));
        // Cut after whole slots.
        assert_eq!(cut_at_limit(&[3, 4, 4, 5], 2, 10), (1, 3));
        assert_eq!(cut_at_limit(&[3, 3, 4, 5], 2, 10), (2, 3));
        assert_eq!(cut_at_limit(&[3, 3, 4, 5], 3, 10), (3, 4));
        // A single slot larger than the limit is returned whole.
        assert_eq!(cut_at_limit(&[3, 3, 3, 5], 2, 10), (3, 3));
        assert_eq!(cut_at_limit(&[3, 3, 3], 2, 10), (3, 10));
    }
}
