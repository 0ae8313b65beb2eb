//! Event series: repeats of one event become one Event object whose count goes up, as
//! kubelet's event recorder (client-go's correlator) does. Two occurrences are the same event
//! when they agree on the object (its UID), reason, message and type — the source is always
//! this agent on this node. A repeat within [`WINDOW`] of the last one is counted into the
//! Event already published (a patch of its count and last time); after a quiet [`WINDOW`], or
//! once a publish failed, the next occurrence starts a new Event. Pure: the publisher does the
//! I/O.

use std::{collections::HashMap, time::Duration};

use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::events::EventType;
use tokio::time::Instant;

use crate::pods::events::EventSpec;

/// How long after its last occurrence an event is still counted into the same Event: the
/// interval of client-go's event aggregator (10 minutes).
pub(crate) const WINDOW: Duration = Duration::from_secs(600);

/// What makes two occurrences the same event.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Key {
    uid: Option<String>,
    namespace: Option<String>,
    name: Option<String>,
    reason: String,
    note: String,
    warning: bool,
}

impl Key {
    /// The key of event `s` about `obj`.
    pub(crate) fn of(obj: &ObjectReference, s: &EventSpec) -> Self {
        Self {
            uid: obj.uid.clone(),
            namespace: obj.namespace.clone(),
            name: obj.name.clone(),
            reason: s.reason.clone(),
            note: s.note.clone(),
            warning: matches!(s.type_, EventType::Warning),
        }
    }
}

/// How to publish one occurrence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Step {
    /// A new Event.
    Create,
    /// Count it into the Event `name`, which now stands for `count` occurrences.
    Patch {
        /// The Event's name.
        name: String,
        /// Occurrences so far, this one included.
        count: i32,
    },
}

/// One published Event standing for repeated occurrences.
#[derive(Debug, Clone)]
struct Series {
    name: String,
    count: i32,
    last: Instant,
}

/// The live series of this agent's events.
#[derive(Debug, Default)]
pub(crate) struct Correlator {
    live: HashMap<Key, Series>,
}

impl Correlator {
    /// One more occurrence of `key` at `now`: counted into its live Event, or a new one.
    pub(crate) fn observe(&mut self, key: &Key, now: Instant) -> Step {
        self.live.retain(|_, s| now.duration_since(s.last) < WINDOW);
        match self.live.get_mut(key) {
            Some(s) => {
                s.count = s.count.saturating_add(1);
                s.last = now;
                Step::Patch {
                    name: s.name.clone(),
                    count: s.count,
                }
            }
            None => Step::Create,
        }
    }

    /// The Event `name` was created for `key` at `now`: repeats are counted into it.
    pub(crate) fn created(&mut self, key: Key, name: String, now: Instant) {
        self.live.insert(
            key,
            Series {
                name,
                count: 1,
                last: now,
            },
        );
    }

    /// Publishing `key` failed (or its Event is gone): its next occurrence creates anew.
    pub(crate) fn forget(&mut self, key: &Key) {
        self.live.remove(key);
    }

    /// Forget every series about the object with UID `uid` (it is gone).
    pub(crate) fn forget_object(&mut self, uid: &str) {
        self.live.retain(|k, _| k.uid.as_deref() != Some(uid));
    }
}

#[cfg(test)]
mod tests;
