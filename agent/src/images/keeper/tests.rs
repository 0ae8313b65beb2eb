//! Tests of [`super::Keeper::pass`] with a scripted cache view and the in-memory tart.

use std::{
    collections::BTreeSet,
    path::PathBuf,
    sync::{Arc, Mutex},
    time::{Duration, SystemTime},
};

use tart::{Op, cache::CachedImage, testing::MemTart};
use tokio::sync::watch;

use super::*;
use crate::images::golden::golden_name;

const GB: u64 = 1_000_000_000;

type Inventory = watch::Receiver<Option<Vec<Held>>>;
type InUse = Box<dyn Fn() -> Option<BTreeSet<String>> + Send + Sync>;

struct Scripted {
    images: Vec<CachedImage>,
    disk: Mutex<Disk>,
}

impl CacheView for Scripted {
    fn scan(&self) -> io::Result<Vec<CachedImage>> {
        Ok(self.images.clone())
    }
    fn disk(&self) -> io::Result<Disk> {
        Ok(*self.disk.lock().unwrap())
    }
}

fn digest(c: char) -> String {
    format!("sha256:{}", c.to_string().repeat(64))
}

fn image(repo: &str, c: char, gb: u64, age_min: u64) -> CachedImage {
    CachedImage {
        host: "r.example".into(),
        repository: repo.into(),
        digest: digest(c),
        tags: vec!["15".into()],
        bytes: gb * GB,
        accessed: SystemTime::UNIX_EPOCH + Duration::from_secs(10_000_000 - age_min * 60),
        explicitly_pulled: false,
        path: PathBuf::new(),
    }
}

fn keeper(
    tart: MemTart,
    images: Vec<CachedImage>,
    free_gb: u64,
    in_use: Option<&[&str]>,
) -> (Keeper<MemTart, Scripted, InUse>, Inventory) {
    let (tx, rx) = watch::channel(None);
    let k = Keeper {
        tart: Arc::new(tart),
        view: Arc::new(Scripted {
            images,
            disk: Mutex::new(Disk {
                total_bytes: 1000 * GB,
                free_bytes: free_gb * GB,
            }),
        }),
        in_use: {
            let set: Option<BTreeSet<String>> =
                in_use.map(|u| u.iter().map(|s| (*s).to_owned()).collect());
            let f: InUse = Box::new(move || set.clone());
            f
        },
        cfg: KeeperConfig {
            period: Duration::from_secs(60),
            budget: Budget {
                high_percent: 85,
                low_percent: 80,
                max_cache_bytes: None,
                min_free_bytes: 10 * GB,
            },
            prefix: "tkl-".into(),
            scan_deadline: Duration::from_secs(5),
        },
        metrics: ImageMetrics::default(),
        inventory: tx,
        wake: Arc::default(),
    };
    (k, rx)
}

#[tokio::test]
async fn within_budget_the_inventory_is_published_and_nothing_goes() {
    let (k, rx) = keeper(MemTart::new(), vec![image("a", 'a', 40, 5)], 500, Some(&[]));
    let r = k.pass().await.unwrap();
    assert_eq!(r.plan, None);
    assert!(r.evicted.is_empty());
    let held = rx.borrow().clone().unwrap();
    assert_eq!(held.len(), 1);
    assert_eq!(held[0].tag_names, ["r.example/a:15"]);
    assert_eq!(held[0].bytes, 40 * GB);
    assert_eq!(k.metrics.cached_digests.get(), 1);
}

#[tokio::test]
async fn past_high_the_oldest_unused_digest_goes_with_its_golden_and_tags() {
    let golden = golden_name("tkl-", &digest('b')).unwrap();
    let tart = MemTart::new().with_vm(golden.as_str());
    // 90 % used: free 100 GB. "a" is older but in use; "b" (60 GB + its golden) goes, then "c".
    let images = vec![
        image("a", 'a', 200, 600),
        image("b", 'b', 60, 300),
        image("c", 'c', 60, 10),
    ];
    let (k, rx) = keeper(tart.clone(), images, 100, Some(&["r.example/a:15"]));
    let r = k.pass().await.unwrap();
    let b = format!("r.example/b@{}", digest('b'));
    let c = format!("r.example/c@{}", digest('c'));
    assert_eq!(r.evicted, [b.clone(), c.clone()]);
    assert!(
        !tart.vm_names().contains(&golden.as_str().to_owned()),
        "golden deleted"
    );
    let deleted = tart.calls_of(Op::Delete);
    assert_eq!(
        deleted,
        [
            golden.as_str().to_owned(),
            "r.example/b:15".into(),
            b.clone(),
            "r.example/c:15".into(),
            c
        ]
    );
    assert!(
        !deleted.iter().any(|d| d.contains("/a")),
        "in use: never evicted"
    );
    assert_eq!(
        k.metrics
            .evictions
            .get_or_create(&TriggerLabels {
                trigger: "disk_high"
            })
            .get(),
        2
    );
    // The golden's bytes count toward its digest in the inventory.
    let held = rx.borrow().clone().unwrap();
    let b_held = held.iter().find(|h| h.digest_name == b).unwrap();
    assert!(b_held.bytes > 60 * GB, "{b_held:?}");
}

#[tokio::test]
async fn a_digest_referenced_by_digest_name_is_protected_too() {
    let images = vec![image("a", 'a', 200, 600)];
    let (k, _) = keeper(MemTart::new(), images, 100, Some(&[]));
    let r = k.pass().await.unwrap();
    assert_eq!(r.evicted.len(), 1, "unused: evicted");

    let name = format!("r.example/a@{}", digest('a'));
    let (k, _) = keeper(
        MemTart::new(),
        vec![image("a", 'a', 200, 600)],
        100,
        Some(&[&name]),
    );
    let r = k.pass().await.unwrap();
    assert!(r.evicted.is_empty());
    assert_eq!(r.plan.unwrap().shortfall_bytes, 100 * GB);
}

#[tokio::test]
async fn before_the_pods_are_known_nothing_is_evicted() {
    let (k, rx) = keeper(MemTart::new(), vec![image("a", 'a', 200, 600)], 100, None);
    let r = k.pass().await.unwrap();
    assert_eq!(r.plan, None);
    assert!(r.evicted.is_empty());
    assert_eq!(
        rx.borrow().as_ref().map(Vec::len),
        Some(1),
        "the inventory is still published"
    );
}
