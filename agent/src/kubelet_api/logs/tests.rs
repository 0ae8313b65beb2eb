use super::*;

#[test]
fn errors_read_like_kubelets_with_its_status() {
    let e = LogError::PodNotFound { pod: "p1".into() };
    assert_eq!(
        (e.status(), e.to_string()),
        (404, r#"pod "p1" does not exist"#.into())
    );
    let e = LogError::ContainerNotFound {
        container: "c".into(),
        pod: "p1".into(),
    };
    assert_eq!(
        (e.status(), e.to_string()),
        (404, r#"container "c" not found in pod "p1""#.into())
    );
    let e = LogError::Unavailable("container \"c\" in pod \"p1\" is terminated".into());
    assert_eq!(e.status(), 400);
    assert_eq!(LogError::Read(io::ErrorKind::Other.into()).status(), 500);
}
