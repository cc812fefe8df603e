//! The inlink counts on disk (see `inlinks.rs`), in two files of
//! `<data dir>/inlinks/` rather than in the index: a whole copy is written
//! at once, and in the index its megabytes sat in memtables until flushed
//! (12 MB of a million-page crawl's memory at a time).
//!
//! - `counts`: a whole copy, "through" a group number: `CDINLC01`, the
//!   group (u64), the number of pairs (u64), the pairs in ascending
//!   fingerprint order, then a CRC-32 of all before it.
//! - `groups`: the groups after it, appended: the group (u64), the number
//!   of pairs (u32), the pairs, a CRC-32 of the record. A record cut short
//!   or damaged (`kill -9`, a full disk) ends the log; it is cut there.
//!
//! A pair is a fingerprint (u64) and a count (u32), all little-endian. A
//! copy is written to `counts.tmp`, synced, renamed over `counts`, and only
//! then is the log emptied: a crash in between leaves groups the copy holds,
//! skipped by their numbers.

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use flate2::Crc;

use super::{private, StoreError};

/// The directory in a data directory.
pub(crate) const INLINKS_DIR: &str = "inlinks";
const COPY_FILE: &str = "counts";
const COPY_TEMP: &str = "counts.tmp";
const LOG_FILE: &str = "groups";
const COPY_MAGIC: &[u8; 8] = b"CDINLC01";
/// Bytes of one pair: the fingerprint and the count.
pub(super) const PAIR_BYTES: usize = 12;
/// Pairs a copy is written and read in at a time.
const PAIRS_A_CHUNK: usize = 4096;
/// A group record's head: its number and its pair count.
const RECORD_HEAD: usize = 12;

/// The open log, and where the files are.
pub(super) struct InlinkFiles {
    dir: PathBuf,
    log: File,
    /// Appended to since the last sync.
    unsynced: AtomicBool,
}

/// A whole copy as read.
pub(super) struct Copy {
    pub group: u64,
    pub fps: Vec<u64>,
    pub counts: Vec<u32>,
}

/// What the files hold, read at opening.
pub(super) struct Stored {
    /// The whole copy: its group, its fingerprints (ascending) and their counts.
    pub copy: Option<Copy>,
    /// The groups logged after it, in order.
    pub groups: Vec<Vec<(u64, u32)>>,
}

fn file_error<'a>(op: &'static str, path: &'a Path) -> impl Fn(io::Error) -> StoreError + 'a {
    move |source| StoreError::File {
        op,
        path: path.to_path_buf(),
        source,
    }
}

impl InlinkFiles {
    /// Opens (or creates) the files in `data_dir` and reads what they hold;
    /// a log record cut short is cut off.
    pub(super) fn open(data_dir: &Path) -> Result<(InlinkFiles, Stored), StoreError> {
        let dir = data_dir.join(INLINKS_DIR);
        private::create_private_dir_all(&dir).map_err(file_error("creating", &dir))?;
        let copy_path = dir.join(COPY_FILE);
        let copy = match File::open(&copy_path) {
            Ok(file) => Some(read_copy(file).map_err(file_error("reading", &copy_path))??),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(file_error("opening", &copy_path)(e)),
        };
        let log_path = dir.join(LOG_FILE);
        let mut log = private::private_file_options()
            .read(true)
            .append(true)
            .create(true)
            .open(&log_path)
            .map_err(file_error("opening", &log_path))?;
        let mut bytes = Vec::new();
        log.read_to_end(&mut bytes)
            .map_err(file_error("reading", &log_path))?;
        let (records, whole) = read_log(&bytes);
        if whole < bytes.len() {
            log.set_len(whole as u64)
                .map_err(file_error("cutting the torn end of", &log_path))?;
        }
        let through = copy.as_ref().map(|copy| copy.group);
        let groups = records
            .into_iter()
            .filter(|(group, _)| through.is_none_or(|through| *group > through))
            .map(|(_, pairs)| pairs)
            .collect();
        let files = InlinkFiles {
            dir,
            log,
            unsynced: AtomicBool::new(false),
        };
        Ok((files, Stored { copy, groups }))
    }

    /// Appends a group's pairs (durable at the next [`InlinkFiles::sync`]).
    pub(super) fn append(&self, group: u64, pairs: &[(u64, u32)]) -> Result<(), StoreError> {
        let n = u32::try_from(pairs.len()).expect("a group holds fewer than 2^32 URLs");
        let mut record = Vec::with_capacity(RECORD_HEAD + pairs.len() * PAIR_BYTES + 4);
        record.extend_from_slice(&group.to_le_bytes());
        record.extend_from_slice(&n.to_le_bytes());
        encode_pairs(pairs.iter().copied(), &mut record);
        let mut crc = Crc::new();
        crc.update(&record);
        record.extend_from_slice(&crc.sum().to_le_bytes());
        self.unsynced.store(true, Ordering::Release);
        (&self.log)
            .write_all(&record)
            .map_err(file_error("appending to", &self.dir.join(LOG_FILE)))
    }

    /// Writes the counts whole, through `group`, then empties the log.
    pub(super) fn write_copy(
        &self,
        group: u64,
        fps: &[u64],
        counts: &[u32],
    ) -> Result<(), StoreError> {
        let temp = self.dir.join(COPY_TEMP);
        let file = private::private_file_options()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&temp)
            .map_err(file_error("creating", &temp))?;
        write_copy(file, group, fps, counts).map_err(file_error("writing", &temp))?;
        let copy = self.dir.join(COPY_FILE);
        std::fs::rename(&temp, &copy).map_err(file_error("renaming", &temp))?;
        File::open(&self.dir)
            .and_then(|dir| dir.sync_all())
            .map_err(file_error("syncing", &self.dir))?;
        let log = self.dir.join(LOG_FILE);
        self.log.set_len(0).map_err(file_error("emptying", &log))?;
        self.unsynced.store(true, Ordering::Release);
        self.sync()
    }

    /// Makes what was appended durable (nothing to do if nothing was).
    pub(super) fn sync(&self) -> Result<(), StoreError> {
        if !self.unsynced.swap(false, Ordering::AcqRel) {
            return Ok(());
        }
        self.log.sync_data().map_err(|e| {
            self.unsynced.store(true, Ordering::Release);
            file_error("syncing", &self.dir.join(LOG_FILE))(e)
        })
    }
}

pub(super) fn encode_pairs(pairs: impl Iterator<Item = (u64, u32)>, out: &mut Vec<u8>) {
    for (fp, n) in pairs {
        out.extend_from_slice(&fp.to_le_bytes());
        out.extend_from_slice(&n.to_le_bytes());
    }
}

/// Pairs from their bytes; `None` unless in strictly ascending order.
pub(super) fn decode_pairs(bytes: &[u8]) -> Option<Vec<(u64, u32)>> {
    let pairs: Vec<(u64, u32)> = bytes
        .chunks_exact(PAIR_BYTES)
        .map(|pair| {
            let (fp, n) = pair.split_at(8);
            let fp = u64::from_le_bytes(fp.try_into().expect("8 bytes"));
            (fp, u32::from_le_bytes(n.try_into().expect("4 bytes")))
        })
        .collect();
    pairs.windows(2).all(|w| w[0].0 < w[1].0).then_some(pairs)
}

fn write_copy(file: File, group: u64, fps: &[u64], counts: &[u32]) -> io::Result<()> {
    let mut out = BufWriter::with_capacity(1 << 16, file);
    let mut crc = Crc::new();
    let mut bytes = Vec::with_capacity(PAIRS_A_CHUNK * PAIR_BYTES);
    bytes.extend_from_slice(COPY_MAGIC);
    bytes.extend_from_slice(&group.to_le_bytes());
    bytes.extend_from_slice(&(fps.len() as u64).to_le_bytes());
    for (fps, counts) in fps.chunks(PAIRS_A_CHUNK).zip(counts.chunks(PAIRS_A_CHUNK)) {
        encode_pairs(fps.iter().copied().zip(counts.iter().copied()), &mut bytes);
        crc.update(&bytes);
        out.write_all(&bytes)?;
        bytes.clear();
    }
    crc.update(&bytes);
    bytes.extend_from_slice(&crc.sum().to_le_bytes());
    out.write_all(&bytes)?;
    out.into_inner().map_err(|e| e.into_error())?.sync_data()
}

/// A copy, read into its arrays; the inner error says the file is damaged.
fn read_copy(file: File) -> io::Result<Result<Copy, StoreError>> {
    let damaged = |why: &str| Ok(Err(super::corrupt("inlink counts", why.to_string())));
    let length = file.metadata()?.len();
    let mut input = BufReader::with_capacity(1 << 16, file);
    let mut head = [0u8; 24];
    if input.read_exact(&mut head).is_err() || &head[..8] != COPY_MAGIC {
        return damaged("the copy's head is missing");
    }
    let group = u64::from_le_bytes(head[8..16].try_into().expect("8 bytes"));
    let n = u64::from_le_bytes(head[16..24].try_into().expect("8 bytes"));
    if n.checked_mul(PAIR_BYTES as u64)
        .and_then(|b| b.checked_add(28))
        != Some(length)
    {
        return damaged("the copy's length does not match its pairs");
    }
    let mut crc = Crc::new();
    crc.update(&head);
    let mut copy = Copy {
        group,
        fps: Vec::with_capacity(n as usize),
        counts: Vec::with_capacity(n as usize),
    };
    let mut chunk = vec![0u8; PAIR_BYTES * PAIRS_A_CHUNK];
    let mut left = n as usize;
    while left > 0 {
        let take = left.min(PAIRS_A_CHUNK);
        let bytes = &mut chunk[..take * PAIR_BYTES];
        input.read_exact(bytes)?;
        crc.update(bytes);
        match decode_pairs(bytes) {
            Some(more) if copy.fps.last().is_none_or(|&last| last < more[0].0) => {
                copy.fps.extend(more.iter().map(|&(fp, _)| fp));
                copy.counts.extend(more.iter().map(|&(_, n)| n));
            }
            _ => return damaged("the copy's pairs are out of order"),
        }
        left -= take;
    }
    let mut sum = [0u8; 4];
    input.read_exact(&mut sum)?;
    if u32::from_le_bytes(sum) != crc.sum() {
        return damaged("the copy's checksum does not match");
    }
    Ok(Ok(copy))
}

/// A log record: its group and its pairs.
type Record = (u64, Vec<(u64, u32)>);

/// The whole records of a log, and the length they take; what follows
/// (cut short, or damaged) is not read.
fn read_log(bytes: &[u8]) -> (Vec<Record>, usize) {
    let mut records = Vec::new();
    let mut at = 0;
    while let Some(head) = bytes.get(at..at + RECORD_HEAD) {
        let group = u64::from_le_bytes(head[..8].try_into().expect("8 bytes"));
        let n = u32::from_le_bytes(head[8..].try_into().expect("4 bytes")) as usize;
        let end = at + RECORD_HEAD + n * PAIR_BYTES;
        let Some(sum) = bytes.get(end..end + 4) else {
            break;
        };
        let mut crc = Crc::new();
        crc.update(&bytes[at..end]);
        if u32::from_le_bytes(sum.try_into().expect("4 bytes")) != crc.sum() {
            break;
        }
        let Some(pairs) = decode_pairs(&bytes[at + RECORD_HEAD..end]) else {
            break;
        };
        records.push((group, pairs));
        at = end + 4;
    }
    (records, at)
}
