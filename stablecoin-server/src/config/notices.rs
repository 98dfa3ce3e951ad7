//! `[notices]`: the text of the "you received money" SMS, and the built-in USSD
//! instructions of the markets the spec names.
//!
//! The short code is the deployment's own (leased per country from the mobile networks):
//! `*144#` is the reference deployment's. The built-in table only says it in each
//! country's language; an operator sets its own code per calling code in
//! `[notices] ussd_instructions`, which overrides the table entry by entry.

use serde::Deserialize;
use std::collections::BTreeMap;

const FR: &str = "Composez le *144# pour ouvrir votre portefeuille et voir votre solde.";
const EN: &str = "Dial *144# to open your wallet and see your balance.";
const PT: &str = "Marque *144# para abrir a sua carteira e ver o seu saldo.";
const ES: &str = "Marque *144# para abrir su billetera y ver su saldo.";

/// The built-in instructions, by calling code: the countries of the currencies the spec
/// names (XOF, XAF, NGN, GHS, KES), each in its official language.
const DEFAULT_USSD: [(&str, &str); 17] = [
    // XOF (UEMOA)
    ("221", FR), // Senegal
    ("223", FR), // Mali
    ("225", FR), // Côte d'Ivoire
    ("226", FR), // Burkina Faso
    ("227", FR), // Niger
    ("228", FR), // Togo
    ("229", FR), // Benin
    ("245", PT), // Guinea-Bissau
    // XAF (CEMAC)
    ("235", FR), // Chad
    ("236", FR), // Central African Republic
    ("237", FR), // Cameroon
    ("240", ES), // Equatorial Guinea
    ("241", FR), // Gabon
    ("242", FR), // Republic of the Congo
    // NGN, GHS, KES
    ("233", EN), // Ghana
    ("234", EN), // Nigeria
    ("254", EN), // Kenya
];

/// The built-in USSD instructions by calling code (see the module documentation); what a
/// recipient in one of these countries is told unless `[notices] ussd_instructions`
/// names its code.
pub fn default_ussd_instructions() -> BTreeMap<String, String> {
    DEFAULT_USSD
        .iter()
        .map(|(code, text)| ((*code).to_string(), (*text).to_string()))
        .collect()
}

/// `[notices]`: the text of the "you received money" SMS, sent to a recipient no tenant
/// serves (`stablecoin_core::engine::SmsPolicy`).
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct NoticeSettings {
    /// USSD access instructions per country, keyed by E.164 calling code without `+`
    /// (`"225" = "Composez le *144# ..."`); the longest code prefixing the number wins.
    /// Each entry replaces the built-in one of its code ([`default_ussd_instructions`]).
    pub ussd_instructions: BTreeMap<String, String>,
    /// The instructions for every number neither table matches; the engine's English
    /// default when absent.
    pub ussd_instructions_default: Option<String>,
}

/// The longest instructions text: the notice must stay one SMS (160 GSM characters)
/// after "You received <amount> <token>. ".
const USSD_TEXT_MAX: usize = 110;

impl NoticeSettings {
    /// The engine's SMS policy with these texts.
    pub fn sms_policy(&self) -> stablecoin_core::engine::SmsPolicy {
        // The built-in table first; a configured code replaces its entry.
        let mut ussd_instructions = default_ussd_instructions();
        ussd_instructions.extend(self.ussd_instructions.clone());
        let mut p = stablecoin_core::engine::SmsPolicy {
            ussd_instructions,
            ..Default::default()
        };
        if let Some(d) = &self.ussd_instructions_default {
            p.ussd_instructions_default = d.clone();
        }
        p
    }

    /// Checks the calling codes (1 to 4 digits) and texts (1 to 110 characters).
    pub fn validate(&self) -> Result<(), String> {
        let text_ok = |t: &str| !t.trim().is_empty() && t.chars().count() <= USSD_TEXT_MAX;
        for (code, text) in &self.ussd_instructions {
            if code.is_empty() || code.len() > 4 || !code.bytes().all(|b| b.is_ascii_digit()) {
                return Err(format!(
                    "notices.ussd_instructions: {code:?} is not a calling code (1 to 4 digits, no +)"
                ));
            }
            if !text_ok(text) {
                return Err(format!(
                    "notices.ussd_instructions.{code} must be 1 to {USSD_TEXT_MAX} characters"
                ));
            }
        }
        match &self.ussd_instructions_default {
            Some(t) if !text_ok(t) => Err(format!(
                "notices.ussd_instructions_default must be 1 to {USSD_TEXT_MAX} characters"
            )),
            _ => Ok(()),
        }
    }
}
