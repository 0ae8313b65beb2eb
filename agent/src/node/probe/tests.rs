use super::*;

fn v(raw: &str, semver: Option<(u32, u32, u32)>) -> Result<tart::Version, tart::Error> {
    Ok(tart::Version {
        raw: raw.into(),
        semver,
    })
}

fn err(kind: tart::ErrorKind) -> Result<tart::Version, tart::Error> {
    Err(tart::Error {
        op: tart::Op::Version,
        kind,
        exit_code: None,
        message: "No such file or directory".into(),
        source: None,
    })
}

#[test]
fn versions_are_checked_against_the_minimum() {
    let min = (2, 20, 0);
    assert_eq!(
        verdict(v("2.35.0", Some((2, 35, 0))), min),
        TartProbe::Ok {
            version: "2.35.0".into()
        }
    );
    assert!(matches!(
        verdict(v("2.1.0", Some((2, 1, 0))), min),
        TartProbe::VersionUnsupported { .. }
    ));
    assert!(matches!(
        verdict(v("SNAPSHOT", None), min),
        TartProbe::Ok { .. }
    ));
}

#[test]
fn a_missing_program_is_not_found_and_other_errors_are_failing() {
    assert!(matches!(
        verdict(err(tart::ErrorKind::Spawn), (2, 0, 0)),
        TartProbe::NotFound { .. }
    ));
    assert!(matches!(
        verdict(err(tart::ErrorKind::Timeout), (2, 0, 0)),
        TartProbe::Failing { .. }
    ));
}

#[tokio::test]
async fn an_unwritable_home_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("file");
    std::fs::write(&file, b"x").unwrap();
    // A path below a regular file can never be created.
    let e = check_writable(&file.join("home")).await;
    assert!(e.is_err());
    check_writable(&dir.path().join("new/home")).await.unwrap();
}
