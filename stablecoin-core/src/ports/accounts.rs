//! Ledger account naming. One place, so every use case, report and adapter agrees.
//!
//! Why beside the ports, not in `engine/`: the names are the vocabulary of the
//! [`Ledger`](crate::ports::Ledger) port shared by the engine and the adapters that read
//! the ledger (a swap venue checks its float under its own account), and an adapter must
//! not depend on the engine (docs/architecture.md). `engine::accounts` re-exports it.
//!
//! | account | meaning | may go negative |
//! |---|---|---|
//! | `fiat_in:<TOKEN>` | value the service received as fiat and issued as stablecoin | yes |
//! | `chain_in:<rail>:<TOKEN>` | value that arrived from outside on a chain | yes |
//! | `treasury:<tenant>:<TOKEN>` | a tenant's treasury balance | no |
//! | `wallet:<wallet>:<TOKEN>` | a customer wallet's custody balance on the EVM rail | no |
//! | `wallet:<wallet>:<rail>:<TOKEN>` | the same wallet's balance on a parallel rail (tron) | no |
//! | `fees:service:<TOKEN>` | the service's transfer-fee income | no |
//! | `fees:tenant:<tenant>:<TOKEN>` | a tenant's own fee income | no |
//! | `swap_venue:<venue>:<TOKEN>` | a swap venue's side of the wallets' trades | yes |
//! | `stray:<sd_id>:<TOKEN>` | a real deposit to a sandbox address, owed back (`kernel::stray`) | no |
//! | `quarantine:<sd_id>:<TOKEN>` | a deposit from a flagged source, held until staff release or return it (`kernel::quarantine`) | no |

use crate::domain::ids::{TenantId, WalletId};
use crate::domain::money::Token;
use crate::ports::ledger::LedgerAccount;
use crate::ports::rail::RailId;

/// `fiat_in:<TOKEN>`: the counterpart of tokens issued against fiat (may go negative).
pub fn fiat_in(token: Token) -> LedgerAccount {
    LedgerAccount {
        id: format!("fiat_in:{token}"),
        allow_negative: true,
    }
}
/// `chain_in:<rail>:<TOKEN>`: the counterpart of tokens that arrived on `rail` from
/// outside (may go negative).
pub fn chain_in(rail: &str, token: Token) -> LedgerAccount {
    LedgerAccount {
        id: format!("chain_in:{rail}:{token}"),
        allow_negative: true,
    }
}
/// `stray:<sd_id>:<TOKEN>`: a real deposit that reached a sandbox address, owed back to
/// its sender until staff return it (`kernel::stray`).
pub fn stray(id: &str, token: Token) -> LedgerAccount {
    LedgerAccount {
        id: format!("stray:{id}:{token}"),
        allow_negative: false,
    }
}
/// `quarantine:<sd_id>:<TOKEN>`: a deposit from a source the sanctions screen flagged,
/// credited here instead of to its wallet, session or deal until staff release or
/// return it (`kernel::quarantine`).
pub fn quarantine(id: &str, token: Token) -> LedgerAccount {
    LedgerAccount {
        id: format!("quarantine:{id}:{token}"),
        allow_negative: false,
    }
}
/// `treasury:<tenant>:<TOKEN>`: a tenant's treasury balance.
pub fn treasury(tenant: &TenantId, token: Token) -> LedgerAccount {
    LedgerAccount {
        id: format!("treasury:{tenant}:{token}"),
        allow_negative: false,
    }
}
/// `wallet:<wallet>:<TOKEN>`: a customer wallet's custody balance on the EVM rails.
pub fn wallet(wallet: &WalletId, token: Token) -> LedgerAccount {
    LedgerAccount {
        id: format!("wallet:{wallet}:{token}"),
        allow_negative: false,
    }
}
/// The wallet's custody balance on `rail`. The parallel rails (TRON, Solana) hold
/// their own tokens at their own addresses, so they keep their own accounts: a TRON
/// send must never spend USDT that sits on an EVM chain.
pub fn wallet_on(wallet: &WalletId, rail: RailId, token: Token) -> LedgerAccount {
    match rail {
        RailId::Evm(_) => self::wallet(wallet, token),
        other => LedgerAccount {
            id: format!("wallet:{wallet}:{}:{token}", other.name()),
            allow_negative: false,
        },
    }
}
/// `fees:service:<TOKEN>`: the service's transfer-fee income.
pub fn service_fees(token: Token) -> LedgerAccount {
    LedgerAccount {
        id: format!("fees:service:{token}"),
        allow_negative: false,
    }
}
/// `fees:tenant:<tenant>:<TOKEN>`: a tenant's own fee income.
pub fn tenant_fees(tenant: &TenantId, token: Token) -> LedgerAccount {
    LedgerAccount {
        id: format!("fees:tenant:{tenant}:{token}"),
        allow_negative: false,
    }
}
/// `swap_venue:<venue>:<TOKEN>`: the venue's side of the wallets' trades (may go
/// negative: it is value that came from, or went to, outside the ledger).
pub fn swap_venue(venue: &str, token: Token) -> LedgerAccount {
    LedgerAccount {
        id: format!("swap_venue:{venue}:{token}"),
        allow_negative: true,
    }
}
