//! Medians: of the samples of a row, and of ratios measured within a round.

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn odd_and_even_counts_and_failed_runs_left_out() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(median(vec![5.0]), 5.0);
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
}
