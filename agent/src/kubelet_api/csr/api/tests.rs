use k8s_openapi::api::certificates::v1::{
    CertificateSigningRequestCondition, CertificateSigningRequestStatus,
};

use super::*;

fn csr(conditions: &[(&str, &str)], cert: &[u8]) -> CertificateSigningRequest {
    let mut c = object("n", "pem");
    c.status = Some(CertificateSigningRequestStatus {
        conditions: Some(
            conditions
                .iter()
                .map(|(t, s)| CertificateSigningRequestCondition {
                    type_: (*t).into(),
                    status: (*s).into(),
                    reason: Some(format!("{t}Reason")),
                    message: Some("by test".into()),
                    ..Default::default()
                })
                .collect(),
        ),
        certificate: (!cert.is_empty()).then(|| ByteString(cert.to_vec())),
    });
    c
}

#[test]
fn verdicts_follow_kubelets_order() {
    type Case<'a> = (&'a [(&'a str, &'a str)], &'a [u8], Verdict);
    let cases: &[Case<'_>] = &[
        (&[], b"", Verdict::Pending),
        (&[("Approved", "True")], b"", Verdict::Approved),
        (
            &[("Approved", "True")],
            b"PEM",
            Verdict::Issued(b"PEM".to_vec()),
        ),
        (
            &[("Denied", "True")],
            b"",
            Verdict::Denied("DeniedReason: by test".into()),
        ),
        (
            &[("Approved", "True"), ("Failed", "True")],
            b"",
            Verdict::Failed("FailedReason: by test".into()),
        ),
        // A condition whose status is False does not count.
        (&[("Denied", "False")], b"", Verdict::Pending),
    ];
    for (conds, cert, want) in cases {
        assert_eq!(&verdict(&csr(conds, cert)), want, "{conds:?}");
    }
    assert_eq!(verdict(&object("n", "pem")), Verdict::Pending);
}

#[test]
fn the_request_names_the_kubelet_serving_signer_and_its_usages() {
    let o = object("mac-1.serving-ab", "-----BEGIN CERTIFICATE REQUEST-----\n");
    assert_eq!(o.spec.signer_name, "kubernetes.io/kubelet-serving");
    assert_eq!(
        o.spec.usages.as_deref().unwrap(),
        ["digital signature", "key encipherment", "server auth"]
    );
    assert_eq!(o.metadata.name.as_deref(), Some("mac-1.serving-ab"));
    assert!(
        o.spec
            .request
            .0
            .starts_with(b"-----BEGIN CERTIFICATE REQUEST")
    );
}
