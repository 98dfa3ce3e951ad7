//! The conformance case of a [`Screening`] adapter: what the engine relies on, whatever
//! the adapter asks (a list file, a vendor, memory).
//!
//! ```ignore
//! stablecoin_core::testkit::case_screening(&my_screen, &ScreeningFixture {
//!     listed: (RailId::Evm(137), ChainAddress("0x...".into())),
//!     clear: (RailId::Evm(137), ChainAddress("0x...".into())),
//! }).await;
//! ```

use crate::domain::chain::{ChainAddress, RailId};
use crate::ports::screening::{Screening, ScreeningVerdict};

/// Two addresses the adapter under test knows the answer for: one its source lists,
/// one it does not.
pub struct ScreeningFixture {
    /// An address the adapter's list or vendor names.
    pub listed: (RailId, ChainAddress),
    /// An address it does not name.
    pub clear: (RailId, ChainAddress),
}

/// Panics unless `screen`:
/// - answers a listed address with a hit that names its list and entry (both non-blank:
///   the audit log records them);
/// - answers the same hit however an EVM address's letters are cased (EIP-55 checksums
///   only change case, so a list in one case must catch the other);
/// - answers a clear address Clear, and the same again when asked again (no answer
///   depends on how often it is asked);
/// - has a non-blank name (recorded beside each decision).
pub async fn case_screening<S: Screening + ?Sized>(screen: &S, f: &ScreeningFixture) {
    assert!(!screen.name().trim().is_empty(), "a screen names itself");
    let (rail, listed) = &f.listed;
    let hit = screen.screen(*rail, listed).await;
    match &hit {
        ScreeningVerdict::Hit { list, reference } => {
            assert!(!list.trim().is_empty(), "a hit names its list");
            assert!(!reference.trim().is_empty(), "a hit names its entry");
        }
        other => panic!("{} is listed, the screen answered {other:?}", listed.0),
    }
    if listed.0.starts_with("0x") && listed.0.len() == 42 {
        for variant in [
            listed.0.to_ascii_uppercase().replacen("0X", "0x", 1),
            listed.0.to_ascii_lowercase(),
        ] {
            let again = screen.screen(*rail, &ChainAddress(variant.clone())).await;
            assert_eq!(
                again, hit,
                "{variant}: an EVM address is listed in any letter case"
            );
        }
    }
    let (rail, clear) = &f.clear;
    for _ in 0..2 {
        assert_eq!(
            screen.screen(*rail, clear).await,
            ScreeningVerdict::Clear,
            "{} is not listed",
            clear.0
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::MemoryScreening;

    #[tokio::test]
    async fn the_memory_screen_conforms() {
        let screen = MemoryScreening::new();
        screen.list("TLsV52sRDL79HXGGm9yzwKibb6BeruhUzy");
        for listed in [
            "0xAbC0000000000000000000000000000000009999",
            "TLsV52sRDL79HXGGm9yzwKibb6BeruhUzy",
        ] {
            case_screening(
                &screen,
                &ScreeningFixture {
                    listed: (RailId::Evm(137), ChainAddress(listed.into())),
                    clear: (
                        RailId::Evm(137),
                        ChainAddress("0xabc0000000000000000000000000000000001234".into()),
                    ),
                },
            )
            .await;
        }
        let out = screen
            .screen(
                RailId::Tron,
                &ChainAddress("TQn9Y2khEsLJW1ChVWFMSMeRDow5KcbLS8888".into()),
            )
            .await;
        assert!(
            matches!(out, ScreeningVerdict::Unavailable { .. }),
            "{out:?}"
        );
    }
}
