//! The names a create gives objects that ask for one with `metadata.generateName`, as kube's
//! `SimpleNameGenerator`: the prefix (at most 58 bytes of it) and five random characters from
//! kube's alphabet, for a name of at most 63 bytes.
//!
//! Invariants: a generator seeded with the same value gives the same names in the same order
//! (tests and reproducible runs name objects alike); an unseeded one draws its seed from the
//! operating system. A create whose generated name is taken tries another, up to
//! [`MAX_CREATE_ATTEMPTS`] in all, then answers [`conflict`] (kube's `GenerateNameConflict`).

use std::sync::Mutex;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::registry::ResourceInfo;
use crate::status::{ApiError, qualified_resource};
use crate::store::BEING_DELETED;

/// How many names a create that asks for a generated one tries before it gives up (kube's
/// `maxNameGenerationCreateAttempts`).
pub const MAX_CREATE_ATTEMPTS: usize = 8;

/// The characters of a generated suffix (kube's, without vowels and look-alikes).
const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// How many characters a generated suffix has.
const SUFFIX_LEN: usize = 5;

/// How much of `generateName` a generated name keeps.
const MAX_PREFIX_LEN: usize = 58;

/// Makes names from `generateName` prefixes.
#[derive(Debug)]
pub struct NameGenerator {
    rng: Mutex<StdRng>,
}

impl Default for NameGenerator {
    fn default() -> Self {
        NameGenerator { rng: Mutex::new(StdRng::from_os_rng()) }
    }
}

impl NameGenerator {
    /// A generator whose names follow from `seed`.
    pub fn seeded(seed: u64) -> Self {
        NameGenerator { rng: Mutex::new(StdRng::seed_from_u64(seed)) }
    }

    /// A new name for an object whose `generateName` is `prefix`.
    pub fn generate(&self, prefix: &str) -> String {
        let mut rng = self.rng.lock().unwrap_or_else(|e| e.into_inner());
        let suffix: String = (0..SUFFIX_LEN).map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char).collect();
        format!("{}{suffix}", prefix.get(..MAX_PREFIX_LEN).unwrap_or(prefix))
    }
}

/// kube's 409 for a create of `info` whose generated name was taken on its last attempt, from
/// `taken`, the AlreadyExists that attempt got: reason `AlreadyExists`, `retryAfterSeconds` 1
/// (and a `Retry-After` header); "object is being deleted: " kept in front when it was there.
pub fn conflict(info: &ResourceInfo, taken: &ApiError) -> ApiError {
    let name = taken.details.as_ref().and_then(|d| d.get("name")).and_then(|n| n.as_str()).unwrap_or_default();
    let mut e = ApiError::already_exists(&info.group, &info.plural, name);
    let deleting = if taken.message.starts_with(BEING_DELETED) { BEING_DELETED } else { "" };
    e.message = format!(
        "{deleting}{} {} already exists, the server was not able to generate a unique name for the object",
        qualified_resource(&info.group, &info.plural),
        crate::structural::go_quote(name)
    );
    if let Some(details) = e.details.as_mut().and_then(|d| d.as_object_mut()) {
        details.insert("retryAfterSeconds".into(), 1.into());
    }
    e.retry_after = Some(1);
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeded_generators_agree_and_names_keep_kube_shape() {
        let (a, b) = (NameGenerator::seeded(7), NameGenerator::seeded(7));
        let names: Vec<_> = (0..4).map(|_| a.generate("web-")).collect();
        assert_eq!(names, (0..4).map(|_| b.generate("web-")).collect::<Vec<_>>());
        for n in &names {
            let suffix = n.strip_prefix("web-").expect("the prefix is kept");
            assert_eq!(suffix.len(), SUFFIX_LEN);
            assert!(suffix.bytes().all(|c| ALPHABET.contains(&c)), "{n}");
        }
        let long = "x".repeat(70);
        assert_eq!(a.generate(&long).len(), MAX_PREFIX_LEN + SUFFIX_LEN);
    }

    #[test]
    fn conflict_is_kube_generate_name_conflict() {
        let info = crate::registry::Registry::with_defaults().find("apps", "v1", "deployments").unwrap().clone();
        let e = conflict(&info, &ApiError::already_exists("apps", "deployments", "web-abcde"));
        assert_eq!((e.code, e.reason.as_str(), e.retry_after), (409, "AlreadyExists", Some(1)));
        assert_eq!(
            e.message,
            "deployments.apps \"web-abcde\" already exists, the server was not able to generate a unique name for the object"
        );
        let details =
            serde_json::json!({"name": "web-abcde", "group": "apps", "kind": "deployments", "retryAfterSeconds": 1});
        assert_eq!(e.details.as_deref(), Some(&details));
    }
}
