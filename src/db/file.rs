//! [`TunedDb`]: one architecture's tuned entries in memory, indexed for lookups, read from and
//! written to the TOML file format described in `tuned-db/README.md` (reading and writing the
//! text: [`text`]).

mod text;

use super::distance::{shape, size_logs};
use super::entry::{Entry, Fingerprint, Seal};
use super::error::DbError;
use super::hash::{FxBuild, FxHasher};
use super::key::parse_key;
use crate::problem::{ConvProblem, DType, Direction, Layout, Tensor};
use std::collections::HashMap;
use std::hash::{Hash, Hasher};

/// The file format version this build reads and writes. Adding an optional field does not
/// change it (old readers ignore unknown keys inside the header and entries, new readers
/// default missing ones); only a change that old readers would misread does.
pub const FORMAT: u32 = 1;

/// The problems whose configs can stand in for each other in a nearest-neighbour search: a
/// config for another direction, type or layout is tuned for different memory access, so only
/// problems sharing all of these are compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Bucket {
    direction: Direction,
    dtype: DType,
    layouts: [Layout; 3],
}

impl Bucket {
    pub(crate) fn of(p: &ConvProblem) -> Bucket {
        Bucket {
            direction: p.direction(),
            dtype: p.dtype(),
            layouts: Tensor::ALL.map(|t| p.layout(t)),
        }
    }
}

/// The tuned database of one architecture.
///
/// Entries keep the order they were read or inserted in (so a loaded file is not re-sorted until
/// it is written), and are indexed by problem (for exact hits) and by bucket (direction, type
/// and layouts; for nearest searches). Keys are parsed once, when an entry enters the database; an entry whose key does
/// not parse is kept (and written back) so no data is lost, but lookups never return it and
/// [`super::check`] reports it.
#[derive(Debug, Clone)]
pub struct TunedDb {
    arch: String,
    entries: Vec<Entry>,
    /// Parsed key of each entry.
    problems: Vec<Option<ConvProblem>>,
    /// [`problem_hash`] → most recent entry index; the other entries with that hash follow
    /// `next_same`. Keyed by the 8-byte hash rather than the problem so the table stays small
    /// enough to sit in cache; lookups compare the problem along the (nearly always one-long)
    /// chain.
    exact: HashMap<u64, u32, FxBuild>,
    /// Per entry: the next entry with the same problem hash, or [`NONE`].
    next_same: Vec<u32>,
    /// Nearest-search data per bucket, laid out so a scan touches no entry.
    buckets: HashMap<Bucket, Vec<NearItem>, FxBuild>,
    /// Per entry: its position in its bucket's vector, or [`NONE`].
    near_pos: Vec<u32>,
    /// Interned (GPU name, compute units) pairs: GPU name → [(units, id)].
    devices: HashMap<String, Vec<(u32, u32)>, FxBuild>,
    /// Per interned device id: how many entries were measured on it (entries are replaced in
    /// place, never removed, so the counts only grow).
    device_entries: Vec<u32>,
    /// The device of the last indexed entry, tried first when interning.
    last_device: Option<(String, u32, u32)>,
    unparsed: Vec<(u32, String)>,
    /// Per entry: what its checksum says. Lookups serve and merges take only trusted entries.
    seals: Vec<Seal>,
    /// The entry count the file's header declares (files written before it did: `None`).
    declared: Option<usize>,
    /// Bumped by every change, so writers can skip rewriting an unchanged file.
    revision: u64,
}

/// A parsed key with everything indexing needs, computed on all cores before the sequential
/// index build.
pub(crate) struct Keyed {
    problem: ConvProblem,
    hash: u64,
    bucket: Bucket,
    logs: [f64; 5],
}

impl Keyed {
    fn new(problem: ConvProblem) -> Keyed {
        Keyed {
            hash: problem_hash(&problem),
            bucket: Bucket::of(&problem),
            logs: size_logs(problem.sizes()),
            problem,
        }
    }
}

/// A well-mixed 64-bit hash of a problem (FxHash, then the SplitMix64 finaliser so that every
/// bit depends on every input bit, as the hash table's bucket and tag bits need).
fn problem_hash(p: &ConvProblem) -> u64 {
    let mut h = FxHasher::default();
    p.hash(&mut h);
    let mut z = h.finish();
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// End of an index chain.
const NONE: u32 = u32::MAX;

/// What the nearest search needs of one entry, copied out of it so that scanning a bucket of
/// thousands stays in cache.
#[derive(Debug, Clone)]
pub(crate) struct NearItem {
    /// Index into the entries.
    pub(crate) idx: u32,
    /// Interned (GPU, compute units) of its fingerprint.
    pub(crate) device: u32,
    /// Its measured time (tie-break).
    pub(crate) time_us: f64,
    /// log2 of n, c, k, H, W.
    pub(crate) logs: [f64; 5],
    /// y, x, strides, dilations, groups, then the two paddings.
    pub(crate) shape: [u32; 9],
}

/// What [`TunedDb::insert`] did with an entry.
#[derive(Debug, Clone, PartialEq)]
pub enum Inserted {
    /// No entry for this problem and fingerprint existed.
    Added,
    /// The new entry was faster and took the place of this one.
    Replaced {
        /// The slower entry that was dropped.
        previous: Entry,
    },
    /// An entry at least as fast was already there; the new one was dropped.
    Kept {
        /// The time of the entry that stayed.
        existing_time_us: f64,
    },
}

impl TunedDb {
    /// An empty database for `arch` (`sm_90`, `gfx90a`, …).
    pub fn new(arch: &str) -> TunedDb {
        TunedDb {
            arch: arch.to_string(),
            entries: Vec::new(),
            problems: Vec::new(),
            exact: HashMap::default(),
            next_same: Vec::new(),
            buckets: HashMap::default(),
            near_pos: Vec::new(),
            devices: HashMap::default(),
            device_entries: Vec::new(),
            last_device: None,
            unparsed: Vec::new(),
            seals: Vec::new(),
            declared: None,
            revision: 0,
        }
    }

    /// A counter that changes whenever the entries do.
    pub(crate) fn revision(&self) -> u64 {
        self.revision
    }

    /// The architecture the entries were tuned for; configs do not carry over between arches.
    pub fn arch(&self) -> &str {
        &self.arch
    }

    /// Number of entries, including ones whose key does not parse.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are no entries.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// All entries in read/insert order (see [`Self::sorted`] for file order).
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// All entries in the order the file is written in: by problem key, then fingerprint, then
    /// time, then config, so that output is identical whatever order entries arrived in.
    pub fn sorted(&self) -> Vec<&Entry> {
        self.sorted_indices()
            .into_iter()
            .map(|i| &self.entries[i])
            .collect()
    }

    /// Indices of [`Self::entries`] in [`Self::sorted`] order.
    fn sorted_indices(&self) -> Vec<usize> {
        let mut v: Vec<usize> = (0..self.entries.len()).collect();
        let e = &self.entries;
        v.sort_by(|&a, &b| {
            let (a, b) = (&e[a], &e[b]);
            a.problem
                .cmp(&b.problem)
                .then_with(|| a.fingerprint.cmp(&b.fingerprint))
                .then_with(|| a.time_us.total_cmp(&b.time_us))
                .then_with(|| a.config.cmp(&b.config))
                .then_with(|| a.checksum.cmp(&b.checksum))
        });
        v
    }

    /// Entries tuned for exactly this problem (any fingerprint): a hash-map hit.
    pub fn get(&self, problem: &ConvProblem) -> impl Iterator<Item = &Entry> + '_ {
        self.indices_of(problem).map(|i| &self.entries[i])
    }

    /// Indices of the entries of `problem`, newest first.
    pub(crate) fn indices_of(&self, problem: &ConvProblem) -> impl Iterator<Item = usize> + '_ {
        let problem = *problem;
        let mut at = self
            .exact
            .get(&problem_hash(&problem))
            .copied()
            .unwrap_or(NONE);
        std::iter::from_fn(move || loop {
            if at == NONE {
                return None;
            }
            let i = at as usize;
            at = self.next_same[i];
            if self.problems[i] == Some(problem) {
                return Some(i);
            }
        })
    }

    /// Entries whose key is `key` or names the same problem. A key that does not parse matches
    /// only entries spelled exactly the same.
    pub fn get_key(&self, key: &str) -> Vec<&Entry> {
        match parse_key(key) {
            Ok(p) => self.get(&p).collect(),
            Err(_) => self
                .unparsed
                .iter()
                .map(|&(i, _)| &self.entries[i as usize])
                .filter(|e| e.problem == key)
                .collect(),
        }
    }

    /// Entries whose key did not parse, with the parser's reason.
    pub fn unparsed(&self) -> impl Iterator<Item = (&Entry, &str)> + '_ {
        self.unparsed
            .iter()
            .map(|(i, why)| (&self.entries[*i as usize], why.as_str()))
    }

    /// What the checksum of entry `i` (an index into [`Self::entries`]) says.
    pub fn seal_at(&self, i: usize) -> Seal {
        self.seals.get(i).copied().unwrap_or(Seal::Broken)
    }

    /// Entries whose checksum fails, with their index: edited by hand or damaged. Lookups skip
    /// them and merges refuse them.
    pub fn broken(&self) -> impl Iterator<Item = (usize, &Entry)> + '_ {
        self.entries
            .iter()
            .enumerate()
            .filter(|(i, _)| !self.seal_at(*i).trusted())
    }

    /// The entry count the header declares, when the file has one and it differs from the
    /// entries read: the file was cut (or entries removed by hand).
    pub fn count_mismatch(&self) -> Option<(usize, usize)> {
        self.declared
            .filter(|&d| d != self.entries.len())
            .map(|d| (d, self.entries.len()))
    }

    /// Fails unless every entry's checksum holds and the header's entry count (if any) matches:
    /// what a merge requires of its inputs, so damage is never blessed with a fresh checksum.
    /// `origin` names the database in the error.
    pub fn require_trusted(&self, origin: &str) -> Result<(), DbError> {
        let invalid = |what: String| DbError::Invalid {
            origin: origin.to_string(),
            what,
        };
        if let Some((declared, found)) = self.count_mismatch() {
            return Err(invalid(format!(
                "the header lists {declared} entries but the file holds {found} (cut short, or \
                 entries removed by hand: check it, then correct `entries` in the header)"
            )));
        }
        let mut broken = self.broken();
        if let Some((i, e)) = broken.next() {
            let more = broken.count();
            return Err(invalid(format!(
                "entry #{} '{}' fails its checksum (edited or damaged){}; `convtune db check` \
                 lists them",
                i + 1,
                crate::input::excerpt(&e.problem, 200),
                if more > 0 {
                    format!(", and {more} more")
                } else {
                    String::new()
                }
            )));
        }
        Ok(())
    }

    /// The parsed problem of entry `i` (an index into [`Self::entries`]).
    pub(crate) fn problem_at(&self, i: usize) -> Option<&ConvProblem> {
        self.problems.get(i).and_then(Option::as_ref)
    }

    /// Nearest-search data of the entries in the same bucket as `problem`.
    pub(crate) fn near_items(&self, problem: &ConvProblem) -> &[NearItem] {
        self.buckets
            .get(&Bucket::of(problem))
            .map_or(&[], Vec::as_slice)
    }

    /// The interned id of a fingerprint's device (GPU name and compute units), if any entry was
    /// measured on such a device.
    pub(crate) fn device_id(&self, fp: &Fingerprint) -> Option<u32> {
        self.devices
            .get(&fp.gpu)?
            .iter()
            .find(|(cus, _)| *cus == fp.compute_units)
            .map(|&(_, id)| id)
    }

    /// The device whose entries a lookup serves: `fingerprint`'s where given (`None` if nothing
    /// was measured on it here), else the [`Self::home_device`].
    pub(crate) fn device_for(&self, fingerprint: Option<&Fingerprint>) -> Option<u32> {
        fingerprint.map_or_else(|| self.home_device(), |fp| self.device_id(fp))
    }

    /// The device most of the entries were measured on (the first interned among equals): the
    /// one a lookup that does not know its GPU serves, where a problem was tuned on several.
    pub(crate) fn home_device(&self) -> Option<u32> {
        let most = *self.device_entries.iter().max()?;
        self.device_entries
            .iter()
            .position(|&n| n == most)
            .map(|id| id as u32)
    }

    /// The devices the entries were measured on, as (GPU name, compute units, entries), the
    /// home device ([`Self::home_device`]) first, then by entries, then by name.
    pub fn devices(&self) -> Vec<(&str, u32, u32)> {
        let home = self.home_device();
        let mut out: Vec<(&str, u32, u32, bool)> = self
            .devices
            .iter()
            .flat_map(|(gpu, list)| {
                list.iter().map(move |&(cus, id)| {
                    (
                        gpu.as_str(),
                        cus,
                        self.device_entries[id as usize],
                        Some(id) == home,
                    )
                })
            })
            .collect();
        out.sort_by(|a, b| {
            b.3.cmp(&a.3)
                .then(b.2.cmp(&a.2))
                .then(a.0.cmp(b.0))
                .then(a.1.cmp(&b.1))
        });
        out.into_iter().map(|(g, c, n, _)| (g, c, n)).collect()
    }

    /// The entry for this problem measured on exactly this fingerprint, if any.
    pub fn find(&self, problem_key: &str, fingerprint: &Fingerprint) -> Option<&Entry> {
        self.find_index(problem_key, fingerprint)
            .map(|i| &self.entries[i])
    }

    fn find_index(&self, problem_key: &str, fingerprint: &Fingerprint) -> Option<usize> {
        self.find_parsed(
            problem_key,
            &parse_key(problem_key).map(Keyed::new),
            fingerprint,
        )
    }

    fn find_parsed(
        &self,
        problem_key: &str,
        key: &Result<Keyed, String>,
        fingerprint: &Fingerprint,
    ) -> Option<usize> {
        let same = |i: &usize| self.entries[*i].fingerprint == *fingerprint;
        match key {
            Ok(k) => self.indices_of(&k.problem).find(same),
            Err(_) => self
                .unparsed
                .iter()
                .map(|&(i, _)| i as usize)
                .find(|i| self.entries[*i].problem == problem_key && same(i)),
        }
    }

    /// Adds a measurement, keeping only the faster one when this problem already has an entry
    /// measured on the same fingerprint (the slower one is then noise or an older code
    /// generator). Entries that break [`Entry::validate`] are refused.
    pub fn insert(&mut self, entry: Entry) -> Result<Inserted, DbError> {
        entry.validate().map_err(|why| DbError::BadEntry {
            key: entry.problem.clone(),
            why,
        })?;
        let key = parse_key(&entry.problem).map(Keyed::new);
        match self.find_parsed(&entry.problem, &key, &entry.fingerprint) {
            Some(i) if entry.time_us < self.entries[i].time_us => {
                // Same problem and fingerprint, so the index stays valid but for the time.
                if let (Some(p), pos) = (self.problems[i], self.near_pos[i]) {
                    if let Some(item) = self
                        .buckets
                        .get_mut(&Bucket::of(&p))
                        .and_then(|b| b.get_mut(pos as usize))
                    {
                        item.time_us = entry.time_us;
                    }
                }
                self.seals[i] = entry.seal();
                let previous = std::mem::replace(&mut self.entries[i], entry);
                self.revision += 1;
                Ok(Inserted::Replaced { previous })
            }
            Some(i) => Ok(Inserted::Kept {
                existing_time_us: self.entries[i].time_us,
            }),
            None => {
                self.push(entry, key);
                Ok(Inserted::Added)
            }
        }
    }

    /// Appends without deduplication (loading keeps duplicates so `check` can report them).
    fn push(&mut self, entry: Entry, key: Result<Keyed, String>) {
        let seal = entry.seal();
        self.entries.push(entry);
        self.index(self.entries.len() - 1, key, seal);
    }

    /// Adds entry `i` (the last one not yet indexed), whose key parsed to `key` and whose
    /// checksum says `seal`, to the indexes.
    fn index(&mut self, i: usize, key: Result<Keyed, String>, seal: Seal) {
        self.revision += 1;
        self.seals.push(seal);
        let e = &self.entries[i];
        let idx = i as u32;
        match key {
            Ok(k) => {
                let device = intern_device(
                    &mut self.devices,
                    &mut self.device_entries,
                    &mut self.last_device,
                    &e.fingerprint,
                );
                self.device_entries[device as usize] += 1;
                let head = self.exact.entry(k.hash).or_insert(NONE);
                self.next_same.push(*head);
                *head = idx;
                let items = self.buckets.entry(k.bucket).or_default();
                self.near_pos.push(items.len() as u32);
                items.push(NearItem {
                    idx,
                    device,
                    time_us: e.time_us,
                    logs: k.logs,
                    shape: shape(k.problem.sizes()),
                });
                self.problems.push(Some(k.problem));
            }
            Err(why) => {
                self.unparsed.push((idx, why));
                self.problems.push(None);
                self.next_same.push(NONE);
                self.near_pos.push(NONE);
            }
        }
    }
}

/// The id of a fingerprint's (GPU, compute units), assigning the next id to a new one. Entries
/// of one file nearly all share a device, so the previous answer is tried first.
fn intern_device(
    devices: &mut HashMap<String, Vec<(u32, u32)>, FxBuild>,
    counts: &mut Vec<u32>,
    last: &mut Option<(String, u32, u32)>,
    fp: &Fingerprint,
) -> u32 {
    if let Some((gpu, cus, id)) = last {
        if *cus == fp.compute_units && *gpu == fp.gpu {
            return *id;
        }
    }
    let list = devices.entry(fp.gpu.clone()).or_default();
    let id = match list.iter().find(|(cus, _)| *cus == fp.compute_units) {
        Some(&(_, id)) => id,
        None => {
            let id = counts.len() as u32;
            counts.push(0);
            list.push((fp.compute_units, id));
            id
        }
    };
    *last = Some((fp.gpu.clone(), fp.compute_units, id));
    id
}
