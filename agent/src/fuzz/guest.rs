//! Fuzz targets for what the guest writes in its `status` share and the host reads: the
//! `vitals` lines ([`crate::vitals::guest`]) and what they explain about a death
//! ([`crate::vitals::death`]), and the job's end — `exit_code`, the `job` mark and the output
//! tail used as a termination message ([`crate::guest_contract::status`]).

use crate::{
    guest_contract::{job, status},
    vitals::{
        death::{self, Ending},
        guest,
    },
};
use tart::fuzz::{COPY_BOUND, Target, strings};

pub(super) fn targets() -> Vec<Target> {
    vec![
        Target {
            name: "guest_vitals",
            run: guest_vitals,
            seeds: vitals_seeds,
            tokens: &[
                "vitals ",
                "ts=",
                "pressure=",
                "free_percent=",
                "swap_used=",
                "load1=",
                "disk_used_percent=",
                "jetsam_kills=",
                "page_size=",
                "K",
                "M",
                "G",
                "T",
                "1e308",
                "NaN",
                "inf",
                "-",
                "\n",
                " ",
            ],
            max_alloc: 4 << 20,
        },
        Target {
            name: "guest_status",
            run: guest_status,
            seeds: status_seeds,
            tokens: &[
                "\n",
                "\r\n",
                "busy",
                "idle",
                "-2147483648",
                "\u{e9}",
                "\u{1f600}",
            ],
            max_alloc: COPY_BOUND,
        },
    ]
}

/// The tail of `vitals`, as read cut and uncut: numbers are in range, and the death summary
/// built from them stays one short line.
fn guest_vitals(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    for cut in [false, true] {
        let samples = guest::parse_tail(&text, cut);
        for s in &samples {
            assert!(s.free_percent.is_none_or(|p| p <= 100), "{s:?}");
            assert!(s.disk_used_percent.is_none_or(|p| p <= 100), "{s:?}");
            assert!(s.load_1m.is_none_or(f64::is_finite), "{s:?}");
        }
        let end = Ending {
            guest_exit: Some(137),
            command_ran: true,
            tart_code: 0,
            tart_signaled: false,
            fault: None,
            guest_silent: cut,
        };
        let verdict = death::classify(&end, &samples, &[]).expect("exit 137 is abnormal");
        assert!(verdict.summary.len() < 512, "{}", verdict.summary);
        assert!(!verdict.summary.contains('\n'), "{}", verdict.summary);
    }
}

/// The job's end: an exit code reads back from its own text, a mark is one of two words, and the
/// output tail keeps kubelet's bounds.
fn guest_status(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    if let Some(code) = status::parse_exit_code(&text) {
        assert_eq!(status::parse_exit_code(&format!("{code}\n")), Some(code));
    }
    if let Some(mark) = job::parse_job_mark(&text) {
        assert_ne!(mark, job::JobActivity::Ended);
    }
    let tail = status::log_tail(&text);
    assert!(tail.len() <= status::MAX_LOG_BYTES, "{} bytes", tail.len());
    assert!(tail.lines().count() <= status::MAX_LOG_LINES);
}

fn vitals_seeds() -> Vec<Vec<u8>> {
    let line = "vitals ts=1732440000 pressure=4 free_percent=3 page_size=16384 free_pages=812 active_pages=453210 wired_pages=180233 compressed_pages=98765 swap_used=1017.50M load1=3.25 disk_used_percent=41 jetsam_kills=2\n";
    strings(&[
        line.to_owned(),
        format!("s ts=1 pressure=1\n{line}vitals ts=2 pressure=2\nvitals ts=3 pre"),
        "vitals ts=5 pressure= free_percent=140 load1=x jetsam_kills=\n".to_owned(),
        "vitals swap_used=2G\nvitals swap_used=3K\n".to_owned(),
    ])
}

fn status_seeds() -> Vec<Vec<u8>> {
    let many: String = (0..200).map(|i| format!("line {i}\n")).collect();
    strings(&[
        "3\n".to_owned(),
        "0".to_owned(),
        "busy\n".to_owned(),
        "idle".to_owned(),
        "warming up\nboom: disk full\n".to_owned(),
        many,
        "\u{e9}".repeat(1500),
    ])
}
