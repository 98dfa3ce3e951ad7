//! Reading the service's secret files: the master seed and the shared token. A file
//! that group or others may read is refused (the seed derives every key of the
//! service). The reference server re-uses [`require_private_file`] for its own seed file.

use crate::Error;
use std::path::Path;

/// Mode bits that give group or others any access.
#[cfg(unix)]
const GROUP_OR_OTHER: u32 = 0o077;

/// Refuses a secret file that group or others may read (Unix; elsewhere the platform's
/// ACLs apply and this accepts every file).
pub fn require_private_file(path: &Path) -> Result<(), String> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path)
            .map_err(|e| format!("{}: {e}", path.display()))?
            .permissions()
            .mode();
        if mode & GROUP_OR_OTHER != 0 {
            return Err(format!(
                "{} is readable by other users (mode {:o}); run: chmod 600 {}",
                path.display(),
                mode & 0o777,
                path.display()
            ));
        }
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}

/// Parses a master seed: 64 hexadecimal characters (32 bytes), surrounding white space
/// ignored.
pub fn parse_seed(text: &str) -> Result<[u8; 32], String> {
    let bytes = crate::protocol::from_hex(text.trim())
        .map_err(|_| "a master seed is 64 hexadecimal characters (32 bytes)".to_string())?;
    <[u8; 32]>::try_from(bytes.as_slice())
        .map_err(|_| "a master seed is 64 hexadecimal characters (32 bytes)".to_string())
}

/// Reads the master seed from a private file (see [`require_private_file`]).
pub fn read_seed_file(path: &Path) -> Result<[u8; 32], Error> {
    let text = read_private(path)?;
    parse_seed(&text).map_err(|e| Error::Config(format!("{}: {e}", path.display())))
}

/// Reads the shared token from a private file; surrounding white space is ignored.
pub fn read_token_file(path: &Path) -> Result<String, Error> {
    Ok(read_private(path)?.trim().to_string())
}

fn read_private(path: &Path) -> Result<String, Error> {
    require_private_file(path).map_err(Error::Config)?;
    std::fs::read_to_string(path).map_err(|e| Error::Config(format!("{}: {e}", path.display())))
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_seed_file_others_can_read_is_refused() {
        let p = std::env::temp_dir().join(format!("scsignerseed-{}", std::process::id()));
        std::fs::write(&p, "11".repeat(32)).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o640)).unwrap();
        let e = read_seed_file(&p).unwrap_err();
        assert!(e.to_string().contains("chmod 600"), "{e}");
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(read_seed_file(&p).unwrap(), [0x11; 32]);
        std::fs::write(&p, "11".repeat(31)).unwrap();
        assert!(matches!(read_seed_file(&p), Err(Error::Config(_))));
        let _ = std::fs::remove_file(&p);
    }
}
