//! Reading input files: regular files only (a FIFO would block start-up, a
//! device such as `/dev/zero` would never end) and no larger than
//! [`MAX_BYTES`], each refusal one line naming the file.

use anyhow::{anyhow, bail, Result};
use std::io::Read;
use std::path::Path;

/// The largest file tephra reads: manifests, configs, scenarios and plugin
/// components (the Python example component is 18 MB).
pub const MAX_BYTES: u64 = 256 << 20;

/// The bytes of a regular file of at most [`MAX_BYTES`].
pub fn read(path: &Path) -> Result<Vec<u8>> {
    let meta = std::fs::metadata(path).map_err(|e| anyhow!("{}: {e}", path.display()))?;
    if !meta.is_file() {
        bail!("{}: not a regular file", path.display());
    }
    if meta.len() > MAX_BYTES {
        bail!("{}: {} bytes, more than the {} MiB tephra reads", path.display(), meta.len(), MAX_BYTES >> 20);
    }
    let file = std::fs::File::open(path).map_err(|e| anyhow!("{}: {e}", path.display()))?;
    // The file may grow after the check: read one byte past the limit at most.
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(MAX_BYTES + 1).read_to_end(&mut bytes).map_err(|e| anyhow!("{}: {e}", path.display()))?;
    if bytes.len() as u64 > MAX_BYTES {
        bail!("{}: grew past the {} MiB tephra reads", path.display(), MAX_BYTES >> 20);
    }
    Ok(bytes)
}

/// [`read`], as UTF-8 text.
pub fn read_text(path: &Path) -> Result<String> {
    String::from_utf8(read(path)?).map_err(|_| anyhow!("{}: not UTF-8 text", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_directories_and_fifos_are_refused() {
        let e = read(Path::new("/dev/zero")).unwrap_err().to_string();
        assert_eq!(e, "/dev/zero: not a regular file");
        let dir = std::env::temp_dir();
        assert!(read(&dir).unwrap_err().to_string().ends_with("not a regular file"));
        let fifo = dir.join(format!("tephra-fifo-{}", std::process::id()));
        let made = std::process::Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
        assert!(made.success());
        // Refused at once: reading would block until a writer came.
        let e = read_text(&fifo).unwrap_err().to_string();
        std::fs::remove_file(&fifo).unwrap();
        assert!(e.ends_with("not a regular file"), "{e}");
    }

    #[test]
    fn regular_files_are_read() {
        let f = std::env::temp_dir().join(format!("tephra-read-{}", std::process::id()));
        std::fs::write(&f, "kind: Node\n").unwrap();
        assert_eq!(read_text(&f).unwrap(), "kind: Node\n");
        std::fs::write(&f, [0xff, 0xfe]).unwrap();
        assert!(read_text(&f).unwrap_err().to_string().ends_with("not UTF-8 text"));
        std::fs::remove_file(&f).unwrap();
        assert!(read(&f).is_err());
    }
}
