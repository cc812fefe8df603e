//! Files only the operator may read: the data directory holds every page
//! crawled, the crawl's settings and its log, so it is created 0700 and its
//! files 0600 (Unix; elsewhere the platform's defaults apply).
//!
//! Modes are given at creation (a umask can only narrow them) and existing
//! directories the operator chose are left as they are.

use std::fs::{File, OpenOptions};
use std::io;
use std::path::Path;

/// Mode of directories crawldeck creates.
pub const DIR_MODE: u32 = 0o700;
/// Mode of files crawldeck creates.
pub const FILE_MODE: u32 = 0o600;

/// `create_dir_all`, with every directory it creates private.
pub fn create_private_dir_all(path: &Path) -> io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, DIR_MODE);
    builder.create(path)
}

/// Open options for a new private file (the mode applies when it is created).
pub fn private_file_options() -> OpenOptions {
    let mut options = OpenOptions::new();
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, FILE_MODE);
    options
}

/// Writes `contents` to a new or truncated private file.
pub fn write_private(path: &Path, contents: &[u8]) -> io::Result<()> {
    use std::io::Write;
    let mut file: File = private_file_options()
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)?;
    restrict(path, false)?;
    file.write_all(contents)
}

/// Narrows what another program created (fjall's directory and files) to
/// the private modes, recursively.
pub fn restrict_tree(path: &Path) -> io::Result<()> {
    let meta = std::fs::symlink_metadata(path)?;
    if meta.is_dir() {
        restrict(path, true)?;
        for entry in std::fs::read_dir(path)? {
            restrict_tree(&entry?.path())?;
        }
    } else if meta.is_file() {
        restrict(path, false)?;
    }
    Ok(())
}

/// Sets the private mode of one file or directory.
fn restrict(path: &Path, dir: bool) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = if dir { DIR_MODE } else { FILE_MODE };
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))?;
    }
    #[cfg(not(unix))]
    let _ = (path, dir);
    Ok(())
}

#[cfg(all(test, unix))]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn created_dirs_and_files_are_private() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("a/b");
        create_private_dir_all(&dir).unwrap();
        assert_eq!(mode(&tmp.path().join("a")), 0o700);
        assert_eq!(mode(&dir), 0o700);
        let file = dir.join("f");
        write_private(&file, b"x").unwrap();
        assert_eq!(mode(&file), 0o600);
        // Rewriting a file that was world-readable narrows it.
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        write_private(&file, b"y").unwrap();
        assert_eq!(mode(&file), 0o600);
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        restrict_tree(tmp.path().join("a").as_path()).unwrap();
        assert_eq!(mode(&dir), 0o700);
    }
}
