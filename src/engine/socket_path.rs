//! Unix socket paths of any length. A socket's address holds at most 107
//! bytes of path on Linux, and the data directory's socket (`control.sock`)
//! lives wherever the operator put the crawl: a deep `--data`
//! must not stop the crawl or its viewers. A longer path is reached through
//! an open descriptor of its directory, `/proc/self/fd/N/NAME`, which the
//! kernel resolves to the same file.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

/// The longest path a socket address holds (`sun_path` less its NUL).
pub const MAX_SOCKET_PATH: usize = 107;

/// A path to bind or connect a Unix socket at, standing for a possibly
/// longer one; valid while it lives.
pub struct SocketPath {
    path: PathBuf,
    /// The directory held open while its `/proc/self/fd` name is in use.
    _dir: Option<File>,
}

impl SocketPath {
    /// `path` itself when it fits, else a short name for it.
    pub fn new(path: &Path) -> io::Result<SocketPath> {
        if path.as_os_str().len() <= MAX_SOCKET_PATH {
            return Ok(SocketPath {
                path: path.to_path_buf(),
                _dir: None,
            });
        }
        let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
            return Err(too_long(path, "it names no file in a directory"));
        };
        let dir = File::open(dir)?;
        let short = Path::new("/proc/self/fd")
            .join(dir.as_raw_fd().to_string())
            .join(name);
        if !short.parent().is_some_and(Path::is_dir) {
            return Err(too_long(path, "/proc is not mounted to shorten it"));
        }
        Ok(SocketPath {
            path: short,
            _dir: Some(dir),
        })
    }

    /// The path to hand to `bind` or `connect`.
    pub fn as_path(&self) -> &Path {
        &self.path
    }
}

fn too_long(path: &Path, why: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!(
            "the socket path {} is {} bytes, more than the {MAX_SOCKET_PATH} a Unix socket takes, \
             and {why}: use a shorter --data directory",
            path.display(),
            path.as_os_str().len()
        ),
    )
}

/// A new directory under `root` whose path is over `len` bytes long.
#[cfg(test)]
pub(crate) fn deep_dir(root: &Path, len: usize) -> PathBuf {
    let mut dir = root.to_path_buf();
    while dir.as_os_str().len() <= len {
        dir.push("a-directory-with-a-long-name");
    }
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::os::unix::net::{UnixListener, UnixStream};

    use super::*;

    #[test]
    fn a_short_path_is_used_as_it_is() {
        let path = Path::new("/tmp/x/control.sock");
        assert_eq!(SocketPath::new(path).unwrap().as_path(), path);
    }

    #[test]
    fn a_socket_deeper_than_an_address_holds_is_bound_and_reached() {
        let root = tempfile::tempdir().unwrap();
        let path = deep_dir(root.path(), 200).join("control.sock");
        assert!(
            UnixListener::bind(&path).is_err(),
            "the plain path is too long"
        );

        let listener = UnixListener::bind(SocketPath::new(&path).unwrap().as_path()).unwrap();
        assert!(path.exists(), "the socket is where it was asked for");
        let mut client = UnixStream::connect(SocketPath::new(&path).unwrap().as_path()).unwrap();
        let (mut served, _) = listener.accept().unwrap();
        client.write_all(b"hello").unwrap();
        let mut got = [0; 5];
        served.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"hello");
    }

    #[test]
    fn a_missing_directory_is_an_error_naming_it() {
        let root = tempfile::tempdir().unwrap();
        let path = deep_dir(root.path(), 200).join("gone").join("control.sock");
        let err = SocketPath::new(&path).err().expect("no such directory");
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
    }
}
