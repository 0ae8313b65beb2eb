use std::time::Duration;

use prometheus_client::encoding::text::encode;

use super::*;

#[test]
fn the_expiry_and_the_renewal_errors_are_exported_with_the_agents_prefix() {
    let mut reg = Registry::default();
    let m = ClientCertMetrics::register(&mut reg);
    m.in_use_until(SystemTime::UNIX_EPOCH + Duration::from_secs(1_900_000_000));
    m.renew_errors.inc();
    let mut text = String::new();
    encode(&mut text, &reg).unwrap();
    assert!(
        text.contains("tart_kubelet_client_certificate_expiration_timestamp_seconds 1900000000"),
        "{text}"
    );
    assert!(
        text.contains("tart_kubelet_client_certificate_renew_errors_total 1"),
        "{text}"
    );
}
