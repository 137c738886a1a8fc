//! From what the store holds to the strategy's facts: the pure reading is
//! [`rules::facts`] (re-exported here); this module adds the facts of what a drain step read
//! ([`StepFacts`]).

pub use rules::facts::*;

use crate::store::StepFacts;
use crate::strategy::Facts;

/// The same facts from what a drain step read ([`StepFacts`]: the same rows).
pub fn from_step(s: &StepFacts, can_lookup: CanLookup<'_>) -> Facts {
    from_parts(
        Parts {
            attempts: &s.attempts,
            tries: &s.tries,
            evidence: &s.evidence,
            cfdis: &s.cfdis,
        },
        can_lookup,
    )
}
