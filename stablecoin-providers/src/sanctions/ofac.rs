//! [`OfacList`]: the sanctions screen of the digital-currency addresses OFAC publishes on
//! its SDN list, read from the list's own data file.
//!
//! Why the published file and not a vendor: it is the primary source, free, and an
//! operator can download it on their own schedule (`https://sanctionslistservice.ofac.treas.gov/api/PublicationPreview/exports/SDN.XML`
//! or `SDN.CSV`) and point the service at it; the service reads it again when it
//! changes (its modification time), without a restart.
//!
//! Two of OFAC's formats are read, told apart by the first character:
//! - the legacy SDN XML (`sdn.xml`): each `<sdnEntry>` has a `<uid>`, a `<lastName>`
//!   (and for people a `<firstName>`) and an `<idList>` of `<id>`s; an address is an
//!   `<id>` whose `<idType>` is `Digital Currency Address - <asset>` (`ETH`, `USDT`,
//!   `TRX`, `XBT`, `SOL`, ...) and whose `<idNumber>` is the address. The list's date is
//!   `<publshInformation><Publish_Date>` (sic: OFAC's spelling; `MM/DD/YYYY`).
//! - the legacy CSV (`sdn.csv`): no header; 12 fields per entry, `ent_num` first,
//!   `SDN_Name` second and `Remarks` last, in which each address reads
//!   `Digital Currency Address - <asset> <address>;`. The CSV carries no publication
//!   date, so [`ListInfo::publish_date`] is `None` for it.
//!
//! Every address listed under any asset is screened on every rail: an EVM address is
//! the same key on every EVM chain (OFAC lists one address under `ETH`, `USDT` and
//! `USDC` alike), and the address forms of different chains do not collide.
//! EVM addresses compare without letter case ([`normalize_address`]).
//!
//! A file that cannot be read or parsed (a truncated download: XML without its closing
//! `</sdnList>`, or no address at all) is not loaded: the list read before stays in use
//! and [`ListInfo::last_error`] says why; before any list was loaded every screen
//! answers Unavailable, never clear.

use async_trait::async_trait;
use stablecoin_core::domain::chain::{ChainAddress, RailId};
use stablecoin_core::ports::screening::{Screening, ScreeningVerdict, normalize_address};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::RwLock;
use std::time::SystemTime;

/// The name hits carry as their list.
pub const OFAC_SDN: &str = "OFAC SDN";

/// The prefix of an address identification on the SDN list (OFAC FAQ 563).
const DCA: &str = "Digital Currency Address - ";

/// One listed address: the SDN entry that names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListedAddress {
    /// The entry's `uid` (XML) or `ent_num` (CSV).
    pub uid: String,
    /// The entry's name.
    pub name: String,
    /// The asset it is listed under (`ETH`, `USDT`, `TRX`, ...).
    pub asset: String,
}

/// What is loaded, for operators (`/health/ready` details, logs).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ListInfo {
    /// The file read.
    pub path: PathBuf,
    /// `Publish_Date` as the XML states it (`MM/DD/YYYY`); `None` for the CSV, which
    /// has none, and before a load.
    pub publish_date: Option<String>,
    /// Addresses loaded.
    pub addresses: usize,
    /// The file's modification time when it was loaded.
    pub modified: Option<SystemTime>,
    /// Why the newest read of the file was not loaded (the list before it stays in use).
    pub last_error: Option<String>,
}

/// A parsed list: address (normalised) to its entry, and the publication date.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ParsedList {
    /// By [`normalize_address`]d address.
    pub addresses: HashMap<String, ListedAddress>,
    /// `Publish_Date` (XML only).
    pub publish_date: Option<String>,
}

struct Loaded {
    list: Option<ParsedList>,
    info: ListInfo,
    /// The modification time of a file that did not load: not read again until it
    /// changes (a broken download is not parsed, nor logged, on every screen).
    failed: Option<SystemTime>,
}

/// The SDN list screen, read from `path` and read again whenever the file's
/// modification time changes (checked on each screen: one `stat`).
pub struct OfacList {
    path: PathBuf,
    state: RwLock<Loaded>,
}

impl OfacList {
    /// A screen over the file at `path`, loaded now. A file that does not load is not
    /// an error here (the screen answers Unavailable until it does, see
    /// [`OfacList::info`]), so a service can start while the list is being fetched.
    pub fn open(path: impl Into<PathBuf>) -> Self {
        let path = path.into();
        let s = OfacList {
            state: RwLock::new(Loaded {
                failed: None,
                list: None,
                info: ListInfo {
                    path: path.clone(),
                    ..Default::default()
                },
            }),
            path,
        };
        s.reload_if_changed();
        s
    }

    /// What is loaded now.
    pub fn info(&self) -> ListInfo {
        self.state
            .read()
            .map(|s| s.info.clone())
            .unwrap_or_default()
    }

    /// Reads the file again if its modification time is not the one loaded; `true`
    /// when a new list was loaded. A host may also call it on a schedule.
    pub fn reload_if_changed(&self) -> bool {
        let modified = std::fs::metadata(&self.path).and_then(|m| m.modified());
        let (loaded, failed) = self
            .state
            .read()
            .map(|s| (s.info.modified, s.failed))
            .unwrap_or_default();
        let modified = match modified {
            Ok(m) if Some(m) == loaded || Some(m) == failed => return false,
            Ok(m) => m,
            Err(e) => {
                let e = format!("cannot read {}: {e}", self.path.display());
                // Logged once per new error, not on every screen.
                if self.info().last_error.as_deref() != Some(e.as_str()) {
                    self.set_error(e);
                }
                return false;
            }
        };
        match read_list(&self.path) {
            Ok(list) => {
                tracing::info!(
                    path = %self.path.display(),
                    publish_date = list.publish_date.as_deref().unwrap_or("none (CSV)"),
                    addresses = list.addresses.len(),
                    "sanctions list loaded"
                );
                if let Ok(mut s) = self.state.write() {
                    s.info = ListInfo {
                        path: self.path.clone(),
                        publish_date: list.publish_date.clone(),
                        addresses: list.addresses.len(),
                        modified: Some(modified),
                        last_error: None,
                    };
                    s.list = Some(list);
                    s.failed = None;
                }
                true
            }
            Err(e) => {
                if let Ok(mut s) = self.state.write() {
                    s.failed = Some(modified);
                }
                self.set_error(e);
                false
            }
        }
    }

    fn set_error(&self, e: String) {
        tracing::warn!(error = %e, "sanctions list not loaded (the list before, if any, stays in use)");
        if let Ok(mut s) = self.state.write() {
            s.info.last_error = Some(e);
        }
    }
}

#[async_trait]
impl Screening for OfacList {
    fn name(&self) -> &str {
        "ofac-list"
    }

    async fn screen(&self, _rail: RailId, address: &ChainAddress) -> ScreeningVerdict {
        self.reload_if_changed();
        let Ok(s) = self.state.read() else {
            return ScreeningVerdict::Unavailable {
                reason: "list lock poisoned".into(),
            };
        };
        let Some(list) = &s.list else {
            return ScreeningVerdict::Unavailable {
                reason: format!(
                    "no SDN list loaded: {}",
                    s.info.last_error.as_deref().unwrap_or("not read yet")
                ),
            };
        };
        match list.addresses.get(&normalize_address(&address.0)) {
            None => ScreeningVerdict::Clear,
            Some(e) => ScreeningVerdict::Hit {
                list: match &list.publish_date {
                    Some(d) => format!("{OFAC_SDN} of {d}"),
                    None => OFAC_SDN.into(),
                },
                reference: format!("uid {} {} ({DCA}{})", e.uid, e.name, e.asset),
            },
        }
    }
}

fn read_list(path: &Path) -> Result<ParsedList, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let text = String::from_utf8_lossy(&bytes);
    parse(&text)
}

/// Parses an SDN XML or CSV file (told apart by its first non-blank character).
/// Refuses a truncated XML and a file without a single address.
pub fn parse(text: &str) -> Result<ParsedList, String> {
    let t = text.trim_start_matches('\u{feff}').trim_start();
    let list = if t.starts_with('<') {
        parse_xml(t)?
    } else {
        parse_csv(t)
    };
    if list.addresses.is_empty() {
        return Err("no digital currency address in the file".into());
    }
    Ok(list)
}

/// The legacy SDN XML.
pub fn parse_xml(xml: &str) -> Result<ParsedList, String> {
    if !xml.contains("</sdnList>") {
        return Err("not a complete SDN XML file (no </sdnList>)".into());
    }
    let publish_date = elements(xml, "publshInformation")
        .into_iter()
        .chain(elements(xml, "publishInformation"))
        .find_map(|p| first_text(p, "Publish_Date"));
    let mut addresses = HashMap::new();
    for entry in elements(xml, "sdnEntry") {
        // The entry's own uid comes before its lists (each `<id>` has a uid too).
        let head = entry.split("<idList").next().unwrap_or(entry);
        let uid = first_text(head, "uid").unwrap_or_default();
        let name = match (first_text(head, "firstName"), first_text(head, "lastName")) {
            (Some(f), Some(l)) => format!("{f} {l}"),
            (None, Some(l)) => l,
            (Some(f), None) => f,
            (None, None) => String::new(),
        };
        for id in elements(entry, "id") {
            let (Some(kind), Some(number)) = (first_text(id, "idType"), first_text(id, "idNumber"))
            else {
                continue;
            };
            if let Some(asset) = kind.strip_prefix(DCA) {
                addresses.insert(
                    normalize_address(&number),
                    ListedAddress {
                        uid: uid.clone(),
                        name: name.clone(),
                        asset: asset.trim().to_string(),
                    },
                );
            }
        }
    }
    Ok(ParsedList {
        addresses,
        publish_date,
    })
}

/// The legacy SDN CSV: addresses from each entry's remarks.
pub fn parse_csv(csv: &str) -> ParsedList {
    let mut addresses = HashMap::new();
    for record in csv_records(csv) {
        if record.len() < 12 {
            continue;
        }
        let (uid, name, remarks) = (&record[0], &record[1], &record[11]);
        for part in remarks.split(';') {
            let Some(at) = part.find(DCA) else { continue };
            let rest = part[at + DCA.len()..].trim();
            let mut words = rest.split_whitespace();
            let (Some(asset), Some(address)) = (words.next(), words.next()) else {
                continue;
            };
            let address = address.trim_end_matches(['.', ',']);
            addresses.insert(
                normalize_address(address),
                ListedAddress {
                    uid: uid.trim().to_string(),
                    name: name.trim().to_string(),
                    asset: asset.to_string(),
                },
            );
        }
    }
    ParsedList {
        addresses,
        publish_date: None,
    }
}

/// RFC 4180 records (quoted fields may hold commas, `""` and line breaks); OFAC ends
/// its files with a Ctrl-Z (0x1A) line, which yields a one-field record (skipped by the
/// caller).
fn csv_records(text: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut record = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            (true, '"') => quoted = false,
            (true, c) => field.push(c),
            (false, '"') => quoted = true,
            (false, ',') => record.push(std::mem::take(&mut field)),
            (false, '\n') => {
                record.push(std::mem::take(&mut field));
                out.push(std::mem::take(&mut record));
            }
            (false, '\r') => {}
            (false, c) => field.push(c),
        }
    }
    if !field.is_empty() || !record.is_empty() {
        record.push(field);
        out.push(record);
    }
    out
}

/// The inner text of every `<tag>...</tag>` in `xml` (not nested in one another; a
/// self-closing `<tag/>` has none).
fn elements<'a>(xml: &'a str, tag: &str) -> Vec<&'a str> {
    let open = format!("<{tag}");
    let close = format!("</{tag}>");
    let mut out = Vec::new();
    let mut rest = xml;
    while let Some(at) = rest.find(&open) {
        let after = &rest[at + open.len()..];
        // `<id>` must not match `<idList>` or `<idType>`.
        let Some(end_of_tag) = after.find('>') else {
            break;
        };
        let attrs = &after[..end_of_tag];
        if !(attrs.is_empty() || attrs.starts_with(char::is_whitespace)) || attrs.ends_with('/') {
            rest = after;
            continue;
        }
        let body = &after[end_of_tag + 1..];
        let Some(end) = body.find(&close) else { break };
        out.push(&body[..end]);
        rest = &body[end + close.len()..];
    }
    out
}

/// The first `<tag>`'s text, entity-decoded and trimmed; `None` when absent or blank.
fn first_text(xml: &str, tag: &str) -> Option<String> {
    let t = elements(xml, tag).into_iter().next()?;
    let t = t
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&amp;", "&");
    let t = t.trim();
    (!t.is_empty()).then(|| t.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elements_do_not_confuse_id_with_id_list_or_id_type() {
        let xml = "<idList><id><uid>1</uid><idType>T</idType><idNumber>N</idNumber></id></idList>";
        assert_eq!(elements(xml, "id").len(), 1);
        assert_eq!(first_text(xml, "idType").as_deref(), Some("T"));
    }

    #[test]
    fn csv_fields_keep_quoted_commas_and_quotes() {
        let r = csv_records("1,\"A, B\",\"say \"\"hi\"\"\"\n2,x\n");
        assert_eq!(r[0], vec!["1", "A, B", "say \"hi\""]);
        assert_eq!(r[1], vec!["2", "x"]);
    }

    #[test]
    fn a_truncated_xml_or_an_empty_list_is_refused() {
        assert!(parse("<sdnList><sdnEntry>").is_err());
        assert!(parse("<sdnList></sdnList>").is_err());
        assert!(parse("1,\"X\",-0- \n").is_err());
    }
}
