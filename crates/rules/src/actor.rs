//! Who acts: every write in the outbox names an [`Actor`] (a person or the system), its
//! [`Role`] and the channel it came through, and stores them next to the action.

use serde::{Deserialize, Serialize};

code_enum! {
    /// The role an actor acts in; roles gate the actions the strategy allows (`docs/domain.md`).
    Role {
        /// Small-business staff: record sales, read, add notes.
        Personal = "personal",
        /// Support staff: work the failed rows.
        Soporte = "soporte",
        /// The contador: decisions evidence alone does not allow.
        Contador = "contador",
        /// Timbra itself (the drain worker, automatic steps).
        Sistema = "sistema",
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
