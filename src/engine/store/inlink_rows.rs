//! The rows an earlier version kept the inlink counts in, read once to move
//! them to their files (see `inlinks.rs`): what a key says a row is, and a
//! row's pairs.
//!
//! - A group's tally: the key is its group number (8 bytes, big-endian).
//! - A chunk of a whole copy: 0xFF, the copy's group number, the chunk's
//!   index and the number of chunks (17 bytes). A copy counts only when all
//!   its chunks are there, and then no row older than it counts: a copy cut
//!   short (a full disk, `kill -9`) leaves the rows before it in force.
//! - The format before: `url 0 group → count` (URLs start with a scheme,
//!   never with 0x00 or 0xFF).

use super::inlink_files::PAIR_BYTES;
use super::StoreError;

const COPY_TAG: u8 = 0xFF;
const COPY_KEY_BYTES: usize = 17;

/// What a row is, by its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum RowKind {
    /// A group's tally, by group number.
    Group(u64),
    /// Chunk `chunk` of the `of` chunks of the copy taken at `group`.
    Copy { group: u64, chunk: u32, of: u32 },
    /// A row of the format before.
    Legacy,
}

pub(super) fn kind_of(key: &[u8]) -> RowKind {
    let be_u64 = |b: &[u8]| u64::from_be_bytes(b.try_into().expect("8 bytes"));
    let be_u32 = |b: &[u8]| u32::from_be_bytes(b.try_into().expect("4 bytes"));
    match key.len() {
        8 => RowKind::Group(be_u64(key)),
        COPY_KEY_BYTES if key[0] == COPY_TAG => RowKind::Copy {
            group: be_u64(&key[1..9]),
            chunk: be_u32(&key[9..13]),
            of: be_u32(&key[13..17]),
        },
        _ => RowKind::Legacy,
    }
}

#[cfg(test)]
pub(super) fn group_key(group: u64) -> Vec<u8> {
    group.to_be_bytes().to_vec()
}

#[cfg(test)]
pub(super) fn copy_key(group: u64, chunk: u32, of: u32) -> Vec<u8> {
    let mut key = Vec::with_capacity(COPY_KEY_BYTES);
    key.push(COPY_TAG);
    key.extend_from_slice(&group.to_be_bytes());
    key.extend_from_slice(&chunk.to_be_bytes());
    key.extend_from_slice(&of.to_be_bytes());
    key
}

#[cfg(test)]
pub(super) fn encode_pairs(pairs: impl Iterator<Item = (u64, u32)>) -> Vec<u8> {
    let mut out = Vec::with_capacity(pairs.size_hint().0 * PAIR_BYTES);
    super::inlink_files::encode_pairs(pairs, &mut out);
    out
}

/// A row's pairs; they are in ascending order and each once, as written.
pub(super) fn decode_pairs(value: &[u8]) -> Result<Vec<(u64, u32)>, StoreError> {
    if value.len() % PAIR_BYTES != 0 {
        return Err(super::corrupt("inlink counts", "not whole pairs"));
    }
    super::inlink_files::decode_pairs(value)
        .ok_or_else(|| super::corrupt("inlink counts", "pairs out of order"))
}

/// The URL of a row of the format before: the URL, a 0 byte, the group.
pub(super) fn legacy_url_of(key: &[u8]) -> Result<&str, StoreError> {
    let end = key
        .len()
        .checked_sub(9)
        .filter(|&at| key[at] == 0)
        .ok_or_else(|| super::corrupt("inlink key", "no group number"))?;
    std::str::from_utf8(&key[..end]).map_err(|_| super::corrupt("inlink key", "not UTF-8"))
}

pub(super) fn legacy_count(value: &[u8]) -> Result<u32, StoreError> {
    let bytes: [u8; 4] = value
        .try_into()
        .map_err(|_| super::corrupt("inlink count", "not 4 bytes"))?;
    Ok(u32::from_le_bytes(bytes))
}

/// Which rows count, from every row's kind: the newest whole copy and the
/// groups after it, or (no whole copy) every group and the rows of the
/// format before. The rest is stale.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Counted {
    /// The group of the whole copy in force, if any.
    pub copy: Option<u64>,
}

impl Counted {
    pub(super) fn of(kinds: &[RowKind]) -> Counted {
        let mut chunks: std::collections::BTreeMap<u64, (u32, u32)> = Default::default();
        for kind in kinds {
            if let RowKind::Copy { group, of, .. } = *kind {
                chunks.entry(group).or_insert((of, 0)).1 += 1;
            }
        }
        let copy = chunks
            .into_iter()
            .rev()
            .find(|(_, (of, seen))| of == seen)
            .map(|(group, _)| group);
        Counted { copy }
    }

    pub(super) fn counts(&self, kind: RowKind) -> bool {
        match (kind, self.copy) {
            (RowKind::Group(_), None) => true,
            (RowKind::Group(group), Some(copy)) => group > copy,
            (RowKind::Copy { group, .. }, copy) => Some(group) == copy,
            (RowKind::Legacy, copy) => copy.is_none(),
        }
    }
}
