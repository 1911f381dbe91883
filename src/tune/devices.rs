//! Which devices and which problems a campaign takes: `--devices all|0,1`, `--shard i/n`.

use super::campaign_error::CampaignError;
use std::str::FromStr;

/// The devices that tune, one worker each.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Devices {
    /// One device (`--device N`).
    One(usize),
    /// Every device present.
    All,
    /// These devices, in this order.
    List(Vec<usize>),
}

/// A `--devices` or `--shard` value that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectionError {
    /// Not `I/N` with `I < N`.
    #[error("--shard '{0}': expected I/N with I < N")]
    Shard(String),
    /// A list element that is not an ordinal.
    #[error("--devices '{spec}': '{token}' is not a GPU ordinal")]
    Devices {
        /// The whole value.
        spec: String,
        /// The element.
        token: String,
    },
}

impl FromStr for Devices {
    type Err = SelectionError;
    /// `all`, or a comma-separated list of ordinals.
    fn from_str(spec: &str) -> Result<Devices, SelectionError> {
        if spec == "all" {
            return Ok(Devices::All);
        }
        spec.split(',')
            .map(|t| {
                t.trim().parse().map_err(|_| SelectionError::Devices {
                    spec: spec.to_string(),
                    token: t.to_string(),
                })
            })
            .collect::<Result<_, _>>()
            .map(Devices::List)
    }
}

impl Devices {
    /// The device whose fingerprint the database entries carry and whose arch is checked first.
    pub fn primary(&self) -> usize {
        match self {
            Devices::One(d) => *d,
            Devices::All => 0,
            Devices::List(l) => l.first().copied().unwrap_or(0),
        }
    }

    /// The ordinals, checked against the `present` devices.
    pub(super) fn resolve(&self, present: usize) -> Result<Vec<usize>, CampaignError> {
        let list = match self {
            Devices::One(d) => vec![*d],
            Devices::All => (0..present).collect(),
            Devices::List(l) => l.clone(),
        };
        match list.iter().find(|&&d| d >= present) {
            Some(&ordinal) => Err(CampaignError::BadDevice { ordinal, present }),
            None => Ok(list),
        }
    }
}

/// Problems `index`, `index + count`, `index + 2·count`, … of a list: one host's share.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// 0-based, below `count`.
    pub index: usize,
    /// Hosts the list is split across.
    pub count: usize,
}

impl FromStr for Shard {
    type Err = SelectionError;
    /// `I/N` with `I < N`.
    fn from_str(s: &str) -> Result<Shard, SelectionError> {
        s.split_once('/')
            .and_then(|(i, n)| Some((i.parse::<usize>().ok()?, n.parse::<usize>().ok()?)))
            .filter(|&(i, n)| n > 0 && i < n)
            .map(|(index, count)| Shard { index, count })
            .ok_or_else(|| SelectionError::Shard(s.to_string()))
    }
}

impl Shard {
    /// This shard's share of `list`.
    pub fn select<T>(self, list: Vec<T>) -> Vec<T> {
        list.into_iter()
            .skip(self.index)
            .step_by(self.count)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_split_a_list_without_overlap() {
        let s: Shard = "1/3".parse().unwrap();
        assert_eq!(s.select((0..8).collect()), vec![1, 4, 7]);
        for bad in ["3/3", "1/0", "x/2", "1", "-1/2"] {
            let e = bad.parse::<Shard>().unwrap_err();
            assert_eq!(
                e.to_string(),
                format!("--shard '{bad}': expected I/N with I < N")
            );
        }
    }

    #[test]
    fn device_lists_parse_and_are_checked_against_what_is_present() {
        assert_eq!(
            "all".parse::<Devices>().unwrap().resolve(3).unwrap(),
            [0, 1, 2]
        );
        let l: Devices = "2, 0".parse().unwrap();
        assert_eq!((l.primary(), l.resolve(3).unwrap()), (2, vec![2, 0]));
        assert!(matches!(
            l.resolve(2),
            Err(CampaignError::BadDevice {
                ordinal: 2,
                present: 2
            })
        ));
        assert!("0,x"
            .parse::<Devices>()
            .unwrap_err()
            .to_string()
            .contains("'x'"));
        assert_eq!(Devices::One(1).resolve(2).unwrap(), [1]);
    }
}
