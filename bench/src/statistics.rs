//! Medians: of the samples of a row, and of ratios measured within a round
//! (with their spread over the rounds).

/// The median of the finite values; NaN when there is none.
pub fn median(mut values: Vec<f64>) -> f64 {
    values.retain(|v| v.is_finite());
    if values.is_empty() {
        return f64::NAN;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    }
}

/// The median of the ratios `numerators[i] / denominators[i]`, one per
/// round (pairs past the shorter list are left out).
pub fn median_ratio(numerators: &[f64], denominators: &[f64]) -> f64 {
    median(
        numerators
            .iter()
            .zip(denominators)
            .map(|(a, b)| a / b)
            .collect(),
    )
}

/// The ratios measured within each round, summed up: their median, the
/// lowest and highest, and how many rounds gave one.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Spread {
    pub median: f64,
    pub min: f64,
    pub max: f64,
    /// Rounds where both runs gave a figure (a failed run leaves NaN).
    pub rounds: usize,
}

impl Spread {
    /// Nothing measured: NaN figures, no round.
    pub const NONE: Spread = Spread {
        median: f64::NAN,
        min: f64::NAN,
        max: f64::NAN,
        rounds: 0,
    };

    /// `0.98–1.10`: the lowest and highest ratio of a round.
    pub fn range(&self) -> String {
        format!("{:.2}–{:.2}", self.min, self.max)
    }
}

/// The ratios `numerators[i] / denominators[i]`, one per round (pairs past
/// the shorter list, and rounds where either run failed, are left out):
/// median, lowest, highest and count.
pub fn ratio_spread(numerators: &[f64], denominators: &[f64]) -> Spread {
    let ratios: Vec<f64> = numerators
        .iter()
        .zip(denominators)
        .map(|(a, b)| a / b)
        .filter(|ratio| ratio.is_finite())
        .collect();
    if ratios.is_empty() {
        return Spread::NONE;
    }
    Spread {
        min: ratios.iter().copied().fold(f64::INFINITY, f64::min),
        max: ratios.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        rounds: ratios.len(),
        median: median(ratios),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn odd_and_even_counts() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(median(vec![5.0]), 5.0);
    }

    #[test]
    fn failed_runs_are_left_out() {
        assert_eq!(median(vec![f64::NAN, 1.0, 3.0]), 2.0);
        assert_eq!(median(vec![f64::INFINITY, 2.0]), 2.0);
        assert!(median(vec![f64::NAN]).is_nan());
        assert!(median(Vec::new()).is_nan());
    }

    #[test]
    fn ratios_within_a_round() {
        // Rounds: 2/1, 3/3, 8/2; a round whose denominator failed counts not.
        assert_eq!(median_ratio(&[2.0, 3.0, 8.0], &[1.0, 3.0, 2.0]), 2.0);
        assert_eq!(median_ratio(&[2.0, 3.0], &[1.0, f64::NAN]), 2.0);
        assert_eq!(median_ratio(&[2.0, 3.0, 4.0], &[1.0]), 2.0);
        assert!(median_ratio(&[], &[]).is_nan());
    }

    #[test]
    fn the_spread_of_the_ratios_within_rounds() {
        // Rounds: 2/1, 3/3, 8/2, and one whose numerator failed.
        let spread = ratio_spread(&[2.0, 3.0, 8.0, f64::NAN], &[1.0, 3.0, 2.0, 1.0]);
        assert_eq!(
            spread,
            Spread {
                median: 2.0,
                min: 1.0,
                max: 4.0,
                rounds: 3
            }
        );
        assert_eq!(spread.range(), "1.00–4.00");
        // The median is the one median_ratio gives.
        assert_eq!(
            spread.median,
            median_ratio(&[2.0, 3.0, 8.0, f64::NAN], &[1.0, 3.0, 2.0, 1.0])
        );
        // Two rounds: the mean of both; a lone round is its own spread.
        let two = ratio_spread(&[1.1, 1.3], &[1.0, 1.0]);
        assert!((two.median - 1.2).abs() < 1e-12 && two.rounds == 2);
        let one = ratio_spread(&[1.5, 9.0], &[1.0]);
        assert_eq!(
            (one.median, one.min, one.max, one.rounds),
            (1.5, 1.5, 1.5, 1)
        );
    }

    #[test]
    fn no_round_no_spread() {
        let none = ratio_spread(&[], &[]);
        assert!(none.median.is_nan() && none.min.is_nan() && none.max.is_nan());
        assert_eq!(none.rounds, 0);
        assert_eq!(ratio_spread(&[1.0], &[f64::NAN]).rounds, 0);
        assert_eq!(ratio_spread(&[1.0], &[0.0]).rounds, 0);
    }
}
