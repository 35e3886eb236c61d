//! Unit tests of the market with GPU types (panics are how tests fail). The independent checks
//! (Clarabel, the KKT conditions in numpy) are in the Python suite; these pin the solver's own
//! invariants.
#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)]

use super::synthetic::{SplitMix64 as Rng, SyntheticMarket as Market};
use super::*;

fn solve_with(m: &Market, tol: f64) -> MarketSolution {
    let settings = SolverSettings {
        tol,
        ..SolverSettings::default()
    };
    match solve(&m.problem(), &settings, None) {
        Ok(s) => s,
        Err(e) => panic!("solve failed: {e}"),
    }
}

/// A market's per-(job, round, type) index.
fn at(m: &Market, i: usize, t: usize, k: usize) -> usize {
    (i * m.rounds + t) * m.types + k
}

/// Feasible: shares in [0, 1], one gang per job and round, no good oversold, utilities as
/// reported and within the ceilings; the certificate's fields agree.
fn assert_feasible(m: &Market, s: &MarketSolution) {
    assert_eq!((s.jobs, s.rounds, s.types), (m.jobs, m.rounds, m.types));
    assert_eq!(s.shares.len(), m.jobs * m.rounds * m.types);
    assert_eq!(s.prices.len(), m.rounds * m.types);
    for i in 0..m.jobs {
        let mut u = m.progress[i];
        for t in 0..m.rounds {
            let held: f64 = (0..m.types).map(|k| s.shares[at(m, i, t, k)]).sum();
            assert!(
                held <= 1.0 + 1e-12,
                "job {i} holds {held} gangs in round {t}"
            );
            for k in 0..m.types {
                let x = s.shares[at(m, i, t, k)];
                assert!((0.0..=1.0).contains(&x));
                if f64::from(m.gang_sizes[i]) > m.supply[t * m.types + k] {
                    assert_eq!(x, 0.0, "a gang that does not fit runs");
                }
                u += m.valuations[at(m, i, t, k)] * x;
            }
        }
        assert!((u - s.utilities[i]).abs() <= 1e-12 * u.max(1.0));
        assert!(u <= m.ceilings[i] * (1.0 + 1e-12));
    }
    for t in 0..m.rounds {
        for k in 0..m.types {
            let used: f64 = (0..m.jobs)
                .map(|i| f64::from(m.gang_sizes[i]) * s.shares[at(m, i, t, k)])
                .sum();
            let supply = m.supply[t * m.types + k];
            assert!(
                used <= supply * (1.0 + 1e-12),
                "round {t} type {k} oversold"
            );
            assert!(s.prices[t * m.types + k] >= 0.0);
        }
    }
    let total: f64 = m.budgets.iter().filter(|&&w| w > 0.0).sum();
    assert!(s.objective <= s.dual_bound);
    assert!(((s.dual_bound - s.objective) / total - s.gap).abs() <= 1e-9 * (1.0 + s.gap));
}

#[test]
fn markets_of_two_to_eight_types_reach_their_certificate() {
    for (types, jobs, rounds, seed) in [
        (2, 40, 8, 1),
        (3, 120, 20, 2),
        (3, 300, 20, 3),
        (4, 90, 13, 4),
        (5, 60, 6, 5),
        (6, 50, 5, 6),
        (7, 30, 4, 7),
        (8, 40, 3, 8),
    ] {
        let m = Market::random_typed(jobs, rounds, types, seed);
        let s = solve_with(&m, 1e-6);
        assert!(s.converged, "K = {types}: {:?} gap {}", s.status, s.gap);
        assert_feasible(&m, &s);
        // the same inputs give the same bits
        assert_eq!(solve_with(&m, 1e-6), s);
    }
}

/// The one-type market and the same market with `extra` types nobody can use (valuations 0, or
/// too small for every gang) have the same equilibrium.
#[test]
fn types_nobody_can_use_change_nothing() {
    for (extra, seed) in [(1, 11), (2, 12), (4, 13)] {
        let one = Market::random(80, 10, seed);
        let types = 1 + extra;
        let mut m = Market::random_typed(80, 10, types, seed);
        for i in 0..m.jobs {
            for t in 0..m.rounds {
                for k in 0..types {
                    let e = at(&m, i, t, k);
                    m.valuations[e] = if k == 0 {
                        one.valuations[i * m.rounds + t]
                    } else if k == 1 {
                        0.0
                    } else {
                        one.valuations[i * m.rounds + t] // unusable: supply 0 below
                    };
                }
            }
        }
        for t in 0..m.rounds {
            for k in 0..types {
                m.supply[t * types + k] = if k == 0 { one.supply[t] } else { 0.0 };
            }
        }
        let (a, b) = (solve_with(&one, 1e-9), solve_with(&m, 1e-9));
        assert!(a.converged && b.converged, "{:?} {:?}", a.status, b.status);
        for i in 0..m.jobs {
            assert!((a.utilities[i] - b.utilities[i]).abs() <= 1e-5 * a.utilities[i]);
            for t in 0..m.rounds {
                assert!((a.shares[i * m.rounds + t] - b.shares[at(&m, i, t, 0)]).abs() <= 1e-3);
            }
        }
        assert!((a.objective - b.objective).abs() <= 1e-8 * m.budgets.iter().sum::<f64>());
    }
}

#[test]
fn permuting_the_types_permutes_the_equilibrium() {
    let m = Market::random_typed(100, 12, 3, 21);
    let order = [2, 0, 1];
    let mut p = m.clone();
    for i in 0..m.jobs {
        for t in 0..m.rounds {
            for (k, &from) in order.iter().enumerate() {
                let e = at(&p, i, t, k);
                p.valuations[e] = m.valuations[at(&m, i, t, from)];
            }
        }
    }
    for t in 0..m.rounds {
        for (k, &from) in order.iter().enumerate() {
            p.supply[t * 3 + k] = m.supply[t * 3 + from];
        }
    }
    let (a, b) = (solve_with(&m, 1e-8), solve_with(&p, 1e-8));
    assert!(a.converged && b.converged);
    let total: f64 = m.budgets.iter().sum();
    assert!((a.objective - b.objective).abs() <= 2e-8 * total);
    for i in 0..m.jobs {
        assert!((a.utilities[i] - b.utilities[i]).abs() <= 1e-4 * a.utilities[i]);
    }
}

/// The equilibrium's bids: the budget identity, and every bid at least the job's payment for the
/// good (with equality where the job holds part of a good and less than a whole gang).
#[test]
fn bids_spend_the_budget_and_pay_for_the_goods() {
    let mut m = Market::random_typed(150, 20, 3, 31);
    m.ceilings.fill(f64::INFINITY);
    let s = solve_with(&m, 1e-8);
    assert!(s.converged);
    for i in 0..m.jobs {
        let u = s.utilities[i];
        let row = (i * m.rounds * m.types)..((i + 1) * m.rounds * m.types);
        let spend: f64 = s.bids[row].iter().sum();
        let expected = m.budgets[i] * (u - m.progress[i]) / u;
        assert!((spend - expected).abs() <= 1e-9 * m.budgets[i]);
        for t in 0..m.rounds {
            let held: f64 = (0..m.types).map(|k| s.shares[at(&m, i, t, k)]).sum();
            for k in 0..m.types {
                let (e, x) = (at(&m, i, t, k), s.shares[at(&m, i, t, k)]);
                let pay = f64::from(m.gang_sizes[i]) * s.prices[t * m.types + k] * x;
                if x > 1e-3 {
                    assert!(
                        s.bids[e] >= pay * (1.0 - 1e-3),
                        "job {i} underpays {t} {k}: x {x} bid {} pay {pay} gap {}",
                        s.bids[e],
                        s.gap
                    );
                }
                if x > 1e-3 && held < 1.0 - 1e-3 {
                    assert!(
                        (s.bids[e] - pay).abs() <= 1e-3 * s.bids[e],
                        "job {i} {t} {k}"
                    );
                }
            }
        }
    }
}

/// Warm starts are accepted and certified like cold ones (with types they save no iterations:
/// see `docs/market.md`).
#[test]
fn warm_starts_reach_the_certificate() {
    let m = Market::random_typed(200, 20, 3, 41);
    let s = solve_with(&m, 1e-6);
    let again = solve(&m.problem(), &SolverSettings::default(), Some(&s.bids)).unwrap();
    assert!(again.converged);
    let total: f64 = m.budgets.iter().sum();
    assert!((again.objective - s.objective).abs() <= 2e-6 * total);
    let next = m.next_round(&s);
    let bids = shift_bids(&s.bids, m.jobs, m.rounds, m.types, 1).unwrap();
    let warm = solve(&next.problem(), &SolverSettings::default(), Some(&bids)).unwrap();
    assert!(warm.converged, "{:?}", warm.status);
    assert_feasible(&next, &warm);
}

#[test]
fn typed_inputs_are_checked_and_errors_name_the_argument() {
    let good = Market::random_typed(4, 3, 2, 51);
    let check = |edit: &dyn Fn(&mut Market), argument: &str| {
        let mut m = good.clone();
        edit(&mut m);
        match solve(&m.problem(), &SolverSettings::default(), None) {
            Err(e) => assert_eq!(e.argument, argument),
            Ok(_) => panic!("accepted a bad {argument}"),
        }
    };
    check(&|m| m.types = 0, "valuations");
    check(&|m| m.types = 3, "valuations");
    check(&|m| m.supply.truncate(5), "supply");
    check(
        &|m| {
            m.gang_sizes[0] = 2;
            m.supply.fill(1.0);
        },
        "gang_sizes",
    );
    check(&|m| m.valuations[5] = f64::NAN, "valuations");
    let mut many = good.clone();
    many.types = MAX_TYPES + 1;
    many.valuations = vec![0.1; 4 * 3 * many.types];
    many.supply = vec![8.0; 3 * many.types];
    match solve(&many.problem(), &SolverSettings::default(), None) {
        Err(e) => assert_eq!(e.argument, "valuations"),
        Ok(_) => panic!("accepted {} types", many.types),
    }
    let response = SolverSettings {
        method: Method::ProportionalResponse,
        ..SolverSettings::default()
    };
    match solve(&good.problem(), &response, None) {
        Err(e) => assert_eq!(e.argument, "method"),
        Ok(_) => panic!("proportional response on types"),
    }
    match solve(
        &good.problem(),
        &SolverSettings::default(),
        Some(&[0.1; 12]),
    ) {
        Err(e) => assert_eq!(e.argument, "warm_start"),
        Ok(_) => panic!("accepted a warm start of the wrong length"),
    }
}

#[test]
fn shift_bids_moves_whole_rounds() {
    // one job, three rounds, two types
    let bids = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
    assert_eq!(
        shift_bids(&bids, 1, 3, 2, 1),
        Ok(vec![3.0, 4.0, 5.0, 6.0, 5.0, 6.0])
    );
    assert_eq!(shift_bids(&bids, 1, 3, 2, 3), Ok(vec![0.0; 6]));
    assert!(shift_bids(&bids, 1, 3, 3, 1).is_err());
    assert!(shift_bids(&bids, 1, 3, 0, 1).is_err());
}

fn round(input: &RoundingInput<'_>) -> Vec<bool> {
    match round_schedule(input) {
        Ok(s) => s,
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn rounding_gives_each_job_one_type_per_round_within_each_supply() {
    let mut rng = Rng(7);
    let (jobs, rounds, types) = (40, 12, 3);
    let gangs: Vec<u32> = (0..jobs)
        .map(|_| 1 + (rng.uniform() * 3.0) as u32)
        .collect();
    let supply: Vec<f64> = (0..rounds * types)
        .map(|g| [9.0, 6.0, 4.0][g % 3])
        .collect();
    let mut shares = vec![0.0; jobs * rounds * types];
    for slot in shares.chunks_exact_mut(types) {
        let w: Vec<f64> = (0..types).map(|_| rng.uniform()).collect();
        let total: f64 = w.iter().sum::<f64>() + rng.uniform();
        for k in 0..types {
            slot[k] = w[k] / total;
        }
    }
    let order: Vec<usize> = (0..jobs).rev().collect();
    let schedule = round(&RoundingInput {
        jobs,
        rounds,
        types,
        shares: &shares,
        gang_sizes: &gangs,
        supply: &supply,
        backfill_order: Some(&order),
        deficit: None,
    });
    for t in 0..rounds {
        for k in 0..types {
            let used: u32 = (0..jobs)
                .filter(|&i| schedule[(i * rounds + t) * types + k])
                .map(|i| gangs[i])
                .sum();
            assert!(f64::from(used) <= supply[t * types + k]);
        }
        for i in 0..jobs {
            let running = (0..types)
                .filter(|&k| schedule[(i * rounds + t) * types + k])
                .count();
            assert!(running <= 1, "job {i} runs {running} gangs in round {t}");
        }
    }
}

#[test]
fn rounding_follows_the_most_owed_pair_first() {
    // Two jobs of one GPU, two types of one GPU each, one round: job 0 is owed 0.9 of type 1
    // and 0.1 of type 0, job 1 0.6 of type 1: job 0 takes type 1, job 1 (owed nothing on type
    // 0) waits, and backfilling gives it type 0.
    let shares = [0.1, 0.9, 0.0, 0.6];
    let input = RoundingInput {
        jobs: 2,
        rounds: 1,
        types: 2,
        shares: &shares,
        gang_sizes: &[1, 1],
        supply: &[1.0, 1.0],
        backfill_order: None,
        deficit: None,
    };
    assert_eq!(round(&input), vec![false, true, false, false]);
    let order = [1];
    let backfilled = RoundingInput {
        backfill_order: Some(&order),
        ..input
    };
    assert_eq!(round(&backfilled), vec![false, true, true, false]);
    // a deficit on type 0 puts job 1 first there
    let deficit = [0.0, 0.0, 0.5, 0.0];
    let owed = RoundingInput {
        deficit: Some(&deficit),
        ..input
    };
    assert_eq!(round(&owed), vec![false, true, true, false]);
    // the wrong deficit shape is refused, naming it
    let short = RoundingInput {
        deficit: Some(&deficit[..2]),
        ..input
    };
    assert_eq!(
        round_schedule(&short).err().map(|e| e.argument),
        Some("deficit".to_string())
    );
}
