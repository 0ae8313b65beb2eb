use super::*;

#[test]
fn a_pending_key_survives_a_restart_and_files_are_private() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::new(tmp.path().join("pki"));
    assert!(store.pending_key().is_none());
    let key = ServingKey::generate().unwrap();
    store.save_pending_key(&key).unwrap();
    let again = Store::new(tmp.path().join("pki")).pending_key().unwrap();
    assert_eq!(again.public_key(), key.public_key());
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&store.pending_path()), 0o600);
    assert!(store.pending_path().ends_with("kubelet-server-pending.key"));
    assert_eq!(mode(&tmp.path().join("pki")), 0o700);
    store.drop_pending_key();
    assert!(store.pending_key().is_none());
}

#[test]
fn the_current_pair_is_read_back_with_its_key() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::new(tmp.path());
    assert!(store.current().is_none());
    let key = ServingKey::generate().unwrap();
    let cert = CertificateDer::from(vec![0x30, 0x03, 0x02, 0x01, 0x01]);
    store
        .save_current(std::slice::from_ref(&cert), &key)
        .unwrap();
    let pair = store.current().unwrap();
    assert_eq!(pair.chain, [cert]);
    assert_eq!(pair.key.public_key(), key.public_key());
}

#[test]
fn the_client_pair_has_kubelets_file_names_beside_the_serving_one() {
    let tmp = tempfile::tempdir().unwrap();
    let client = Store::with_prefix(tmp.path(), CLIENT);
    let serving = Store::new(tmp.path());
    let key = ServingKey::generate().unwrap();
    let cert = CertificateDer::from(vec![0x30, 0x03, 0x02, 0x01, 0x01]);
    client
        .save_current(std::slice::from_ref(&cert), &key)
        .unwrap();
    assert!(
        client
            .current_path()
            .ends_with("kubelet-client-current.pem")
    );
    assert!(serving.current().is_none());
    assert!(client.current().is_some());
}

#[test]
fn a_private_write_replaces_the_file_whole_with_mode_0600() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("kubeconfig");
    std::fs::write(&path, "old").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    write_private(&path, b"new").unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
    assert_eq!(
        std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o600
    );
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 1);
}

#[test]
fn a_new_request_takes_the_waiting_key_or_keeps_a_new_one() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::with_prefix(tmp.path(), CLIENT);
    let made = store.pending_or_new_key().unwrap();
    assert_eq!(
        store.pending_key().unwrap().public_key(),
        made.public_key(),
        "the new key is kept as the waiting request's"
    );
    let again = store.pending_or_new_key().unwrap();
    assert_eq!(again.public_key(), made.public_key());
    store.drop_pending_key();
    assert_ne!(
        store.pending_or_new_key().unwrap().public_key(),
        made.public_key()
    );
}
