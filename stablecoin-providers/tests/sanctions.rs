//! The sanctions screens: the OFAC SDN list read from the committed sample files (the
//! formats OFAC publishes), and Chainalysis's API through its fake over loopback HTTP.

use stablecoin_core::domain::chain::{ChainAddress, RailId};
use stablecoin_core::ports::screening::{Screening, ScreeningVerdict};
use stablecoin_core::testkit::{ScreeningFixture, case_screening};
use stablecoin_providers::sanctions::chainalysis::{ChainalysisConfig, ChainalysisScreen};
use stablecoin_providers::sanctions::ofac::{OfacList, parse};
use stablecoin_providers::testkit::{Behaviour, FakeChainalysis};
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

const LISTED_EVM: &str = "0x5A1E5a1E0000000000000000000000000000bEEf";
const LISTED_TRON: &str = "TSampLeSdnAddressXXXXXXXXXXXXXXXXX";
const LISTED_SOL: &str = "5amp1eSdnSo1anaAddressXXXXXXXXXXXXXXXXXXXX";
const CLEAR_EVM: &str = "0x1111111111111111111111111111111111111111";
/// Entry 90003's `Registration ID`: address-shaped, but not a digital currency address.
const NOT_AN_ADDRESS_ID: &str = "0x00000000000000000000000000000000000000aa";

fn sample(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("testdata/ofac")
        .join(name)
}

fn addr(s: &str) -> ChainAddress {
    ChainAddress(s.into())
}

fn temp_copy(name: &str, tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "sanctions-{tag}-{}-{}",
        std::process::id(),
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::copy(sample(name), &p).unwrap();
    p
}

/// Rewrites `path` and moves its modification time on, as a new download does (a
/// coarse file-system clock could otherwise leave it unchanged).
fn rewrite(path: &PathBuf, text: &str, age_s: u64) {
    std::fs::write(path, text).unwrap();
    let f = std::fs::File::options().write(true).open(path).unwrap();
    f.set_modified(SystemTime::now() + Duration::from_secs(age_s))
        .unwrap();
}

#[tokio::test]
async fn the_sdn_xml_sample_lists_its_digital_currency_addresses_and_its_date() {
    let list = OfacList::open(sample("sdn_sample.xml"));
    let info = list.info();
    assert_eq!(info.publish_date.as_deref(), Some("11/26/2026"));
    assert_eq!(info.addresses, 4, "{info:?}");
    assert_eq!(info.last_error, None);
    case_screening(
        &list,
        &ScreeningFixture {
            listed: (RailId::Evm(137), addr(LISTED_EVM)),
            clear: (RailId::Evm(137), addr(CLEAR_EVM)),
        },
    )
    .await;
    match list.screen(RailId::Tron, &addr(LISTED_TRON)).await {
        ScreeningVerdict::Hit { list, reference } => {
            assert_eq!(list, "OFAC SDN of 11/26/2026");
            assert!(reference.contains("90001"), "{reference}");
            assert!(
                reference.contains("Digital Currency Address - TRX"),
                "{reference}"
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        list.screen(RailId::Solana, &addr(LISTED_SOL)).await,
        ScreeningVerdict::Hit { .. }
    ));
    // Base58 is case-sensitive: the TRON address in another case is another address.
    assert_eq!(
        list.screen(RailId::Tron, &addr(&LISTED_TRON.to_lowercase()))
            .await,
        ScreeningVerdict::Clear
    );
    assert_eq!(
        list.screen(RailId::Evm(137), &addr(NOT_AN_ADDRESS_ID))
            .await,
        ScreeningVerdict::Clear
    );
}

#[tokio::test]
async fn the_sdn_csv_sample_lists_the_same_addresses_without_a_date() {
    let xml = parse(&std::fs::read_to_string(sample("sdn_sample.xml")).unwrap()).unwrap();
    let csv = parse(&String::from_utf8_lossy(
        &std::fs::read(sample("sdn_sample.csv")).unwrap(),
    ))
    .unwrap();
    let mut a: Vec<_> = xml.addresses.keys().collect();
    let mut b: Vec<_> = csv.addresses.keys().collect();
    a.sort();
    b.sort();
    assert_eq!(a, b);
    assert_eq!(csv.publish_date, None);
    let list = OfacList::open(sample("sdn_sample.csv"));
    case_screening(
        &list,
        &ScreeningFixture {
            listed: (RailId::Evm(8453), addr(LISTED_EVM)),
            clear: (RailId::Evm(8453), addr(CLEAR_EVM)),
        },
    )
    .await;
    match list.screen(RailId::Solana, &addr(LISTED_SOL)).await {
        ScreeningVerdict::Hit { list, reference } => {
            assert_eq!(list, "OFAC SDN");
            assert!(reference.contains("SAMPLEPERSON, Ivan"), "{reference}");
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_changed_file_is_read_again_and_a_broken_one_keeps_the_list_before() {
    let path = temp_copy("sdn_sample.xml", "reload");
    let list = OfacList::open(&path);
    assert_eq!(
        list.screen(RailId::Evm(1), &addr(CLEAR_EVM)).await,
        ScreeningVerdict::Clear
    );
    // A new publication lists CLEAR_EVM under entry 90001, dated a day later.
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replace("11/26/2026", "11/27/2026")
        .replace(
            "<uid>190004</uid>",
            &format!(
                "<uid>190009</uid><idType>Digital Currency Address - USDC</idType><idNumber>{CLEAR_EVM}</idNumber></id><id><uid>190004</uid>"
            ),
        );
    rewrite(&path, &text, 10);
    assert!(matches!(
        list.screen(RailId::Evm(1), &addr(CLEAR_EVM)).await,
        ScreeningVerdict::Hit { .. }
    ));
    assert_eq!(list.info().publish_date.as_deref(), Some("11/27/2026"));
    assert_eq!(list.info().addresses, 5);
    // A truncated download is not loaded: the list before stays, and says why.
    rewrite(&path, &text[..text.len() / 2], 20);
    assert!(matches!(
        list.screen(RailId::Evm(1), &addr(CLEAR_EVM)).await,
        ScreeningVerdict::Hit { .. }
    ));
    let info = list.info();
    assert_eq!(info.publish_date.as_deref(), Some("11/27/2026"));
    assert!(info.last_error.unwrap().contains("</sdnList>"));
    // The next good download loads again (the original list: CLEAR_EVM is clear).
    rewrite(&path, &sample_text(), 30);
    assert_eq!(
        list.screen(RailId::Evm(1), &addr(CLEAR_EVM)).await,
        ScreeningVerdict::Clear
    );
    let info = list.info();
    assert_eq!(info.last_error, None);
    assert_eq!(info.publish_date.as_deref(), Some("11/26/2026"));
}

fn sample_text() -> String {
    std::fs::read_to_string(sample("sdn_sample.xml")).unwrap()
}

#[tokio::test]
async fn no_list_loaded_is_unavailable_never_clear() {
    let list = OfacList::open("/nonexistent/sdn.xml");
    let out = list.screen(RailId::Evm(1), &addr(CLEAR_EVM)).await;
    assert!(
        matches!(out, ScreeningVerdict::Unavailable { .. }),
        "{out:?}"
    );
    assert!(list.info().last_error.is_some());
}

fn chainalysis(base: &str, key: &str, timeout_ms: u64) -> ChainalysisScreen {
    ChainalysisScreen::new(ChainalysisConfig {
        base_url: base.into(),
        api_key: key.into(),
        timeout: Duration::from_millis(timeout_ms),
    })
    .unwrap()
}

#[tokio::test]
async fn chainalysis_answers_hits_and_clears_and_conforms() {
    let fake = FakeChainalysis::start("ca-key").await.unwrap();
    fake.sanction(LISTED_EVM, "SANCTIONS: OFAC SDN Sample Mixer 2026-11-26");
    let screen = chainalysis(fake.base_url(), "ca-key", 2_000);
    case_screening(
        &screen,
        &ScreeningFixture {
            listed: (RailId::Evm(137), addr(LISTED_EVM)),
            clear: (RailId::Evm(137), addr(CLEAR_EVM)),
        },
    )
    .await;
    match screen.screen(RailId::Evm(137), &addr(LISTED_EVM)).await {
        ScreeningVerdict::Hit { list, reference } => {
            assert_eq!(list, "chainalysis:sanctions");
            assert_eq!(reference, "SANCTIONS: OFAC SDN Sample Mixer 2026-11-26");
        }
        other => panic!("{other:?}"),
    }
    assert!(fake.requests() >= 4);
}

#[tokio::test]
async fn chainalysis_failures_are_unavailable_never_clear() {
    let fake = FakeChainalysis::start("ca-key").await.unwrap();
    let wrong = chainalysis(fake.base_url(), "not-the-key", 2_000);
    match wrong.screen(RailId::Evm(1), &addr(CLEAR_EVM)).await {
        ScreeningVerdict::Unavailable { reason } => {
            assert!(reason.contains("401"), "{reason}");
            assert!(
                !reason.contains("not-the-key"),
                "the key never shows: {reason}"
            );
        }
        other => panic!("{other:?}"),
    }
    let screen = chainalysis(fake.base_url(), "ca-key", 300);
    for code in [429u16, 500, 503] {
        fake.set_behaviour(Behaviour::Status(code));
        match screen.screen(RailId::Evm(1), &addr(CLEAR_EVM)).await {
            ScreeningVerdict::Unavailable { reason } => {
                assert!(reason.contains(&code.to_string()), "{reason}")
            }
            other => panic!("{code}: {other:?}"),
        }
    }
    fake.set_behaviour(Behaviour::Hang);
    match screen.screen(RailId::Evm(1), &addr(CLEAR_EVM)).await {
        ScreeningVerdict::Unavailable { reason } => {
            assert!(reason.contains("timed out"), "{reason}")
        }
        other => panic!("{other:?}"),
    }
    fake.set_behaviour(Behaviour::Normal);
    assert_eq!(
        screen.screen(RailId::Evm(1), &addr(CLEAR_EVM)).await,
        ScreeningVerdict::Clear
    );
    // Nothing that is not an address reaches the vendor's URL.
    let before = fake.requests();
    let out = screen.screen(RailId::Evm(1), &addr("../admin?x=1")).await;
    assert!(
        matches!(out, ScreeningVerdict::Unavailable { .. }),
        "{out:?}"
    );
    assert_eq!(fake.requests(), before);
}
