//! Valuations: expected epochs gained per round under continuous service.
//!
//! An estimator describes the expected progress of a job served continuously from now as a
//! piecewise-linear curve: a sequence of [`Segment`]s, each taking `seconds` of service for
//! `epochs` epochs at a constant rate. [`RoundFiller`] cuts that curve into rounds of
//! `round_seconds`: entry `t` receives the epochs gained during `[t * round_seconds,
//! (t + 1) * round_seconds)`. Because the segments end when the job does, the entries sum to at
//! most the remaining epochs and are 0 after the expected finish: a job near its end is worth
//! nothing in the rounds it would not use.
//!
//! "Served in round t" therefore assumes the job was also served in every round before `t`:
//! `a_t` is the expected progress of the job's `(t + 1)`-th consecutive round of service.

/// A piece of the expected progress curve: `epochs` epochs in `seconds` of service.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Segment {
    /// Service time, seconds (> 0, or 0 for an instantaneous segment).
    pub seconds: f64,
    /// Epochs gained over it.
    pub epochs: f64,
}

/// Accumulates segments into per-round epoch gains.
#[derive(Debug)]
pub struct RoundFiller<'a> {
    out: &'a mut [f64],
    round_seconds: f64,
    elapsed: f64,
}

impl<'a> RoundFiller<'a> {
    /// A filler writing into `out` (one entry per round, cleared here).
    pub fn new(out: &'a mut [f64], round_seconds: f64) -> Self {
        out.iter_mut().for_each(|x| *x = 0.0);
        Self {
            out,
            round_seconds,
            elapsed: 0.0,
        }
    }

    /// Whether the window is already covered (later segments change nothing).
    pub fn is_full(&self) -> bool {
        self.elapsed >= self.round_seconds * self.out.len() as f64
    }

    /// Add the next segment of the curve.
    pub fn push(&mut self, segment: Segment) {
        if segment.epochs <= 0.0 && segment.seconds <= 0.0 {
            return;
        }
        let start = self.elapsed;
        let end = start + segment.seconds;
        self.elapsed = end;
        let rounds = self.out.len();
        if segment.seconds <= 0.0 {
            let t = (start / self.round_seconds).floor() as usize;
            if let Some(x) = self.out.get_mut(t) {
                *x += segment.epochs;
            }
            return;
        }
        let rate = segment.epochs / segment.seconds;
        let mut t = (start / self.round_seconds).floor() as usize;
        while t < rounds {
            let lo = (t as f64 * self.round_seconds).max(start);
            let hi = ((t + 1) as f64 * self.round_seconds).min(end);
            if hi <= lo {
                break;
            }
            if let Some(x) = self.out.get_mut(t) {
                *x += rate * (hi - lo);
            }
            if hi >= end {
                break;
            }
            t += 1;
        }
    }

    /// Divide every entry by `total_epochs`: epochs become fractions of the job.
    pub fn finish(self, total_epochs: f64) {
        for x in self.out.iter_mut() {
            *x /= total_epochs;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_are_cut_into_rounds() {
        let mut out = vec![9.0; 4];
        let mut filler = RoundFiller::new(&mut out, 100.0);
        filler.push(Segment {
            seconds: 50.0,
            epochs: 1.0,
        });
        filler.push(Segment {
            seconds: 200.0,
            epochs: 2.0,
        });
        assert!(!filler.is_full());
        filler.finish(10.0);
        // Round 0: 1 + 50 s at 0.01 epochs/s; round 1: 1; round 2: 0.5; round 3: 0.
        let expected = [0.15, 0.1, 0.05, 0.0];
        for (a, b) in out.iter().zip(expected) {
            assert!((a - b).abs() < 1e-12, "{out:?}");
        }
    }
}
