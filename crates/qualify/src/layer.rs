//! The layers of a qualification, bottom-up as the Lustre I/O kit says
//! to measure them: a shortfall is then found at the layer that causes
//! it, not blamed on the one above.

use serde::{Serialize, Serializer};

/// One layer of the storage path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Layer {
    /// The network between clients and servers (lst).
    Network,
    /// Devices or objects on the servers (survey disk / obdfilter).
    Devices,
    /// Data through the file system from the clients (xdd).
    Data,
    /// Metadata through the file system from the clients (mdtest).
    Metadata,
}

/// Every layer, in the order they are measured.
pub const ALL: [Layer; 4] = [Layer::Network, Layer::Devices, Layer::Data, Layer::Metadata];

impl Layer {
    /// Its name in plans, figure names and tables.
    pub fn name(self) -> &'static str {
        match self {
            Layer::Network => "network",
            Layer::Devices => "devices",
            Layer::Data => "data",
            Layer::Metadata => "metadata",
        }
    }

    /// The layer named `name`.
    pub fn parse(name: &str) -> Option<Layer> {
        ALL.into_iter().find(|l| l.name() == name)
    }
}

impl std::fmt::Display for Layer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for Layer {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_in_order() {
        for l in ALL {
            assert_eq!(Layer::parse(l.name()), Some(l));
        }
        assert!(ALL.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(Layer::parse("disk"), None);
    }
}
