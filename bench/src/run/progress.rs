//! Where the benchmark is and what is left, on stderr.

use std::time::Instant;

/// Counts runs and prints where the benchmark is and what is left.
pub struct Progress {
    pub started: Instant,
    total: usize,
    pub done: usize,
}

impl Progress {
    /// Starts the clock for `total` runs.
    pub fn new(total: usize) -> Progress {
        Progress {
            started: Instant::now(),
            total,
            done: 0,
        }
    }

    pub fn report(&mut self, what: &str) {
        let elapsed = self.started.elapsed().as_secs();
        let left = if self.done == 0 {
            "?".to_owned()
        } else {
            let per_run = elapsed as f64 / self.done as f64;
            minutes((per_run * self.total.saturating_sub(self.done) as f64) as u64)
        };
        eprintln!(
            "[{}/{} runs, {} so far, about {left} left] {what}",
            self.done,
            self.total,
            minutes(elapsed)
        );
    }
}

pub fn minutes(seconds: u64) -> String {
    format!("{}m{:02}s", seconds / 60, seconds % 60)
}

#[cfg(test)]
mod tests {
    #[test]
    fn minutes_and_seconds() {
        assert_eq!(super::minutes(0), "0m00s");
        assert_eq!(super::minutes(1111), "18m31s");
    }
}
