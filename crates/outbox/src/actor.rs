//! Who acts: every write in the outbox names an [`Actor`] (a person or the system), its
//! [`Role`] and the channel it came through, and stores them next to the action.

use serde::{Deserialize, Serialize};

/// The role an actor acts in; roles gate the actions the strategy allows (`docs/domain.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Small-business staff: record sales, read, add notes.
    Personal,
    /// Support staff: work the failed rows.
    Soporte,
    /// The contador: decisions evidence alone does not allow.
    Contador,
    /// Timbra itself (the drain worker, automatic steps).
    Sistema,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Personal => "personal",
            Role::Soporte => "soporte",
            Role::Contador => "contador",
            Role::Sistema => "sistema",
        }
    }

    pub fn parse(s: &str) -> Option<Role> {
        match s {
            "personal" => Some(Role::Personal),
            "soporte" => Some(Role::Soporte),
            "contador" => Some(Role::Contador),
            "sistema" => Some(Role::Sistema),
            _ => None,
        }
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A person or process acting on the outbox.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Actor {
    /// Who: an operator's name, or a worker id for the system.
    pub name: String,
    pub role: Role,
    /// Through what: `cli`, `import`, `app`, `api`, `drain` (stored as a sale's source).
    pub channel: String,
}

impl Actor {
    pub fn new(name: impl Into<String>, role: Role, channel: impl Into<String>) -> Actor {
        Actor {
            name: name.into(),
            role,
            channel: channel.into(),
        }
    }

    /// Timbra itself acting through `channel`.
    pub fn system(channel: impl Into<String>) -> Actor {
        Actor::new("timbra", Role::Sistema, channel)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_round_trip_through_their_names() {
        for r in [Role::Personal, Role::Soporte, Role::Contador, Role::Sistema] {
            assert_eq!(Role::parse(r.as_str()), Some(r));
        }
        assert_eq!(Role::parse("admin"), None);
    }
}
