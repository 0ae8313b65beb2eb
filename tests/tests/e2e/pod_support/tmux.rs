//! A tmux server on its own socket, for the tests that drive kubectl through a terminal
//! (`exec -it`, `attach -it`); killed when dropped.

use std::time::Duration;

use tart_kubelet_tests::cluster::wait_for;

/// A tmux server on its own socket, killed when dropped.
pub(crate) struct Tmux(pub String);

impl Tmux {
    pub(crate) async fn run(&self, args: &[&str]) -> String {
        let out = tokio::process::Command::new("tmux")
            .args(["-L", &self.0])
            .args(args)
            .output()
            .await
            .expect("tmux");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub(crate) async fn pane(&self) -> String {
        self.run(&["capture-pane", "-p", "-t", "t"]).await
    }

    pub(crate) async fn pane_size(&self) -> String {
        let s = self
            .run(&[
                "display-message",
                "-p",
                "-t",
                "t",
                "#{pane_height} #{pane_width}",
            ])
            .await;
        s.trim().to_owned()
    }

    /// Waits until the pane shows `text` `n` times.
    pub(crate) async fn wait_for_text(&self, text: &str, n: usize) -> Result<(), String> {
        wait_for(Duration::from_secs(30), || async {
            (self.pane().await.matches(text).count() >= n).then_some(())
        })
        .await
        .map_err(|_| text.to_owned())
    }
}

impl Drop for Tmux {
    #[allow(clippy::disallowed_methods)] // a blocking one-shot cleanup in Drop
    fn drop(&mut self) {
        let _ = std::process::Command::new("tmux")
            .args(["-L", &self.0, "kill-server"])
            .status();
    }
}
