//! Unit tests of the market solver and the rounding (panics are how tests fail).
#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)]

use super::*;

use super::synthetic::{SplitMix64 as Rng, SyntheticMarket as Market};

fn solve_default(m: &Market) -> MarketSolution {
    match solve(&m.problem(), &SolverSettings::default(), None) {
        Ok(s) => s,
        Err(e) => panic!("solve failed: {e}"),
    }
}

/// Feasibility, budget identity and bang-per-buck optimality, within `slack`.
fn assert_equilibrium(m: &Market, s: &MarketSolution, slack: f64) {
    let (n, t) = (m.jobs, m.rounds);
    for r in 0..t {
        let used: f64 = (0..n)
            .map(|i| f64::from(m.gang_sizes[i]) * s.shares[i * t + r])
            .sum();
        assert!(used <= m.supply[r] * (1.0 + 1e-12), "round {r} oversold");
    }
    for i in 0..n {
        let row = &s.shares[i * t..(i + 1) * t];
        assert!(row.iter().all(|x| (0.0..=1.0).contains(x)));
        let u: f64 = m.progress[i]
            + (0..t)
                .map(|r| m.valuations[i * t + r] * row[r])
                .sum::<f64>();
        assert!((u - s.utilities[i]).abs() <= 1e-12);
        assert!(u <= m.ceilings[i] * (1.0 + 1e-12));
        let at_ceiling = u >= m.ceilings[i] * (1.0 - 1e-4);
        if at_ceiling {
            continue;
        }
        let gang = f64::from(m.gang_sizes[i]);
        let spend: f64 = s.bids[i * t..(i + 1) * t].iter().sum();
        let expected = m.budgets[i] * (u - m.progress[i]) / u;
        assert!(
            (spend - expected).abs() <= 1e-9 * m.budgets[i],
            "job {i}: spends {spend}, expected {expected}"
        );
        for r in 0..t {
            let cost = gang * s.prices[r] * row[r];
            if row[r] > 1e-3 {
                assert!(
                    s.bids[i * t + r] >= cost * (1.0 - slack),
                    "job {i} underpays round {r}"
                );
            }
            if row[r] > 1e-3 && row[r] < 1.0 - 1e-3 {
                let bid = s.bids[i * t + r];
                assert!(
                    (bid - cost).abs() <= slack * bid,
                    "job {i}: bid {bid}, cost {cost}"
                );
            }
            if s.prices[r] <= 0.0 {
                continue;
            }
            let bang = m.budgets[i] * m.valuations[i * t + r] / (gang * u * s.prices[r]);
            if row[r] > 1e-3 {
                assert!(
                    bang >= 1.0 - slack,
                    "job {i} buys a dear round {r} ({bang})"
                );
            }
            if row[r] < 1.0 - 1e-3 {
                assert!(
                    bang <= 1.0 + slack,
                    "job {i} skips a cheap round {r} ({bang})"
                );
            }
        }
    }
}

#[test]
fn two_equal_jobs_split_one_round() {
    let m = Market {
        jobs: 2,
        rounds: 1,
        types: 1,
        valuations: vec![1.0, 1.0],
        gang_sizes: vec![1, 1],
        supply: vec![1.0],
        budgets: vec![1.0, 1.0],
        progress: vec![0.0, 0.0],
        ceilings: vec![f64::INFINITY; 2],
    };
    let s = solve_default(&m);
    assert!(s.converged);
    for x in &s.shares {
        assert!((x - 0.5).abs() < 1e-6, "share {x}");
    }
    // Each job spends its whole budget (no offset) on half a GPU: price 2.
    assert!((s.prices[0] - 2.0).abs() < 1e-5, "price {}", s.prices[0]);
}

#[test]
fn a_round_with_room_to_spare_is_free_and_held_whole() {
    // Round 0: only job 6 can use it, and its 8-GPU gang fits twice (no price); round 1 is
    // contested. Regression (found by hypothesis): the interior-point method started round 0 at
    // a floored price with a tiny slack, raised its price, and stalled far from the optimum.
    let m = Market {
        jobs: 8,
        rounds: 2,
        types: 1,
        valuations: vec![
            0.0,
            0.164_502_958_730_930_18,
            0.0,
            0.102_621_955_832_229_27,
            0.0,
            0.064_784_106_357_367_09,
            0.0,
            0.0,
            0.0,
            0.028_886_106_012_566_182,
            0.0,
            0.161_309_460_127_524_1,
            0.095_104_812_187_274_46,
            0.197_712_440_060_629_5,
            0.0,
            0.012_748_611_854_035_64,
        ],
        gang_sizes: vec![4, 1, 8, 2, 2, 2, 8, 4],
        supply: vec![17.0, 8.0],
        budgets: vec![1.0; 8],
        progress: vec![0.0; 8],
        ceilings: vec![f64::INFINITY; 8],
    };
    let settings = SolverSettings {
        tol: 1e-10,
        ..SolverSettings::default()
    };
    let s = match solve(&m.problem(), &settings, None) {
        Ok(s) => s,
        Err(e) => panic!("{e}"),
    };
    assert!(s.converged, "gap {}", s.gap);
    assert_eq!(s.shares[12], 1.0);
    assert!(s.shares[13] <= 1e-6, "share {}", s.shares[13]);
}

#[test]
fn a_lone_job_takes_every_round_for_free() {
    let m = Market {
        jobs: 1,
        rounds: 3,
        types: 1,
        valuations: vec![0.1, 0.2, 0.3],
        gang_sizes: vec![2],
        supply: vec![4.0; 3],
        budgets: vec![1.0],
        progress: vec![0.2],
        ceilings: vec![1.0],
    };
    let s = solve_default(&m);
    assert!(s.converged);
    assert!(s.shares.iter().all(|&x| x == 1.0));
    assert!(s.prices.iter().all(|&p| p == 0.0));
    assert!((s.utilities[0] - 0.8).abs() < 1e-12);
}

#[test]
fn interior_point_reaches_equilibrium_and_agrees_with_proportional_response() {
    let m = Market::random(40, 8, 7);
    let ip = solve_default(&m);
    assert!(ip.converged, "gap {}", ip.gap);
    assert!(ip.objective <= ip.dual_bound);
    assert_equilibrium(&m, &ip, 2e-2);
    let settings = SolverSettings {
        tol: 1e-7,
        max_iter: 200_000,
        method: Method::ProportionalResponse,
        ..SolverSettings::default()
    };
    let pr = match solve(&m.problem(), &settings, None) {
        Ok(s) => s,
        Err(e) => panic!("{e}"),
    };
    assert!(pr.converged, "gap {}", pr.gap);
    for i in 0..m.jobs {
        let (a, b) = (ip.utilities[i], pr.utilities[i]);
        assert!((a - b).abs() <= 1e-3 * a, "job {i}: {a} vs {b}");
    }
}

#[test]
fn the_status_says_why_a_solve_stopped() {
    let m = Market::random(40, 8, 7);
    let converged = solve_default(&m);
    assert_eq!(converged.status, SolverStatus::Converged);
    for method in Method::ALL {
        let settings = SolverSettings {
            tol: 1e-12,
            max_iter: 3,
            method,
            ..SolverSettings::default()
        };
        let s = match solve(&m.problem(), &settings, None) {
            Ok(s) => s,
            Err(e) => panic!("{e}"),
        };
        assert!(!s.converged, "{method}: gap {}", s.gap);
        assert_eq!(s.status, SolverStatus::IterationLimit, "{method}");
        assert!(s.iterations <= 3);
    }
    // A tolerance below what double precision certifies: the method stops on its own, never
    // at the caller's (large) iteration budget.
    let settings = SolverSettings {
        tol: 1e-300,
        ..SolverSettings::default()
    };
    let s = match solve(&m.problem(), &settings, None) {
        Ok(s) => s,
        Err(e) => panic!("{e}"),
    };
    assert!(!s.converged);
    assert!(
        matches!(
            s.status,
            SolverStatus::Stalled | SolverStatus::NumericalTrouble
        ),
        "{}",
        s.status
    );
}

#[test]
fn results_are_bitwise_deterministic() {
    let m = Market::random(60, 10, 3);
    assert_eq!(solve_default(&m), solve_default(&m));
}

#[test]
fn avx2_passes_give_the_same_bits() {
    // Markets of the fixed-width (T = 20) and general paths, with and without ceilings, cold and
    // warm; on a CPU without AVX2 both runs take the generic path (and trivially agree).
    for (jobs, rounds, seed) in [(300, 20, 1), (200, 7, 2), (150, 33, 3), (400, 20, 4)] {
        let mut m = Market::random(jobs, rounds, seed);
        if seed == 3 {
            m.ceilings.fill(f64::INFINITY);
        }
        for tol in [1e-4, 1e-8] {
            let on = SolverSettings {
                tol,
                ..SolverSettings::default()
            };
            let off = SolverSettings { simd: false, ..on };
            let solve_with = |s: &SolverSettings, m: &Market, warm: Option<&[f64]>| match solve(
                &m.problem(),
                s,
                warm,
            ) {
                Ok(s) => s,
                Err(e) => panic!("{e}"),
            };
            let cold = solve_with(&on, &m, None);
            assert_eq!(
                cold,
                solve_with(&off, &m, None),
                "{jobs}x{rounds} tol {tol}"
            );
            let next = m.next_round(&cold);
            let bids = match shift_bids(&cold.bids, jobs, rounds, 1, 1) {
                Ok(b) => b,
                Err(e) => panic!("{e}"),
            };
            assert_eq!(
                solve_with(&on, &next, Some(&bids)),
                solve_with(&off, &next, Some(&bids)),
                "{jobs}x{rounds} tol {tol} warm"
            );
        }
    }
}

#[test]
fn scaling_every_budget_scales_prices_only() {
    let m = Market::random(50, 6, 11);
    let base = solve_default(&m);
    let mut scaled = Market::random(50, 6, 11);
    for w in &mut scaled.budgets {
        *w *= 3f64.powi(12);
    }
    let big = solve_default(&scaled);
    assert!(big.converged);
    for i in 0..m.jobs {
        assert!((base.utilities[i] - big.utilities[i]).abs() <= 1e-5 * base.utilities[i]);
    }
    for t in 0..m.rounds {
        let ratio = big.prices[t] / 3f64.powi(12);
        assert!((ratio - base.prices[t]).abs() <= 1e-4 * base.prices[t].max(1e-12));
    }
}

#[test]
fn jobs_that_can_gain_nothing_get_nothing() {
    let mut m = Market::random(10, 4, 5);
    for t in 0..4 {
        m.valuations[t] = 0.0; // job 0: nothing to gain
        m.valuations[4 + t] = 0.0; // job 1: nothing to gain, and no progress
    }
    m.progress[1] = 0.0;
    let s = solve_default(&m);
    assert!(s.converged);
    assert!(s.shares[..8].iter().all(|&x| x == 0.0));
    assert_eq!(s.utilities[1], 0.0);
    assert!(s.objective.is_finite());
}

#[test]
fn a_gang_that_does_not_fit_a_round_gets_none_of_it() {
    let mut m = Market::random(12, 3, 9);
    m.gang_sizes[0] = 8;
    m.supply = vec![8.0, 4.0, 8.0];
    let s = solve_default(&m);
    assert!(s.converged);
    assert_eq!(s.shares[1], 0.0);
}

#[test]
fn an_empty_market_has_an_empty_answer() {
    let m = Market {
        jobs: 0,
        rounds: 5,
        types: 1,
        valuations: vec![],
        gang_sizes: vec![],
        supply: vec![3.0; 5],
        budgets: vec![],
        progress: vec![],
        ceilings: vec![],
    };
    let s = solve_default(&m);
    assert!(s.converged && s.shares.is_empty() && s.prices == vec![0.0; 5]);
}

#[test]
fn warm_start_from_the_shifted_solution_converges() {
    let m = Market::random(80, 12, 21);
    let first = solve_default(&m);
    let shifted = match shift_bids(&first.bids, m.jobs, m.rounds, 1, 1) {
        Ok(b) => b,
        Err(e) => panic!("{e}"),
    };
    let mut next = Market::random(80, 12, 21);
    for i in 0..m.jobs {
        let row = &mut next.valuations[i * 12..(i + 1) * 12];
        row.rotate_left(1);
        row[11] = row[10];
        next.progress[i] = (m.progress[i] + m.valuations[i * 12] * first.shares[i * 12]).min(0.95);
    }
    let warm = match solve(&next.problem(), &SolverSettings::default(), Some(&shifted)) {
        Ok(s) => s,
        Err(e) => panic!("{e}"),
    };
    assert!(warm.converged);
    assert_equilibrium(&next, &warm, 2e-2);
}

#[test]
fn bad_inputs_name_their_argument() {
    let good = Market::random(3, 2, 1);
    let check = |edit: &dyn Fn(&mut Market), argument: &str| {
        let mut m = Market::random(3, 2, 1);
        edit(&mut m);
        match solve(&m.problem(), &SolverSettings::default(), None) {
            Err(e) => assert_eq!(e.argument, argument, "{e}"),
            Ok(_) => panic!("accepted bad {argument}"),
        }
    };
    check(&|m| m.valuations[0] = f64::NAN, "valuations");
    check(&|m| m.valuations[1] = -1.0, "valuations");
    check(
        &|m| m.valuations.pop().map(drop).unwrap_or(()),
        "valuations",
    );
    check(&|m| m.gang_sizes[0] = 0, "gang_sizes");
    check(&|m| m.gang_sizes[0] = 10_000, "gang_sizes");
    check(&|m| m.supply[0] = f64::INFINITY, "supply");
    check(&|m| m.budgets[2] = -0.5, "budgets");
    check(&|m| m.progress[0] = 1.0, "progress");
    check(&|m| m.progress[0] = -0.1, "progress");
    check(&|m| m.ceilings[0] = m.progress[0], "ceilings");
    check(&|m| m.ceilings[0] = f64::NAN, "ceilings");
    let bad_tol = SolverSettings {
        tol: 0.0,
        ..SolverSettings::default()
    };
    assert!(solve(&good.problem(), &bad_tol, None).is_err());
    let bad_warm = vec![-1.0; 6];
    match solve(&good.problem(), &SolverSettings::default(), Some(&bad_warm)) {
        Err(e) => assert_eq!(e.argument, "warm_start"),
        Ok(_) => panic!("accepted negative bids"),
    }
}

#[test]
fn shift_bids_drops_the_past_and_repeats_the_last_round() {
    let bids = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
    assert_eq!(
        shift_bids(&bids, 2, 3, 1, 1),
        Ok(vec![2.0, 3.0, 3.0, 5.0, 6.0, 6.0])
    );
    assert_eq!(shift_bids(&bids, 2, 3, 1, 3), Ok(vec![0.0; 6]));
    assert!(shift_bids(&bids, 2, 2, 1, 1).is_err());
}

#[test]
fn rounding_respects_capacity_and_tracks_plans() {
    let mut rng = Rng(42);
    let (jobs, rounds) = (30, 20);
    let mut shares = vec![0.0; jobs * rounds];
    // Unit gangs, 10 GPUs, shares summing to 10 per round: counts must track plans within one.
    for t in 0..rounds {
        let weights: Vec<f64> = (0..jobs).map(|_| rng.uniform()).collect();
        let total: f64 = weights.iter().sum();
        for i in 0..jobs {
            shares[i * rounds + t] = (10.0 * weights[i] / total).min(1.0);
        }
    }
    let gangs = vec![1; jobs];
    let supply = vec![10.0; rounds];
    let input = RoundingInput {
        jobs,
        rounds,
        types: 1,
        shares: &shares,
        gang_sizes: &gangs,
        supply: &supply,
        backfill_order: None,
        deficit: None,
    };
    let schedule = match round_schedule(&input) {
        Ok(s) => s,
        Err(e) => panic!("{e}"),
    };
    for t in 0..rounds {
        let running = (0..jobs).filter(|&i| schedule[i * rounds + t]).count();
        assert!(running <= 10);
    }
    for i in 0..jobs {
        let planned: f64 = shares[i * rounds..(i + 1) * rounds].iter().sum();
        let got = schedule[i * rounds..(i + 1) * rounds]
            .iter()
            .filter(|&&r| r)
            .count() as f64;
        assert!(
            (got - planned).abs() < 1.0,
            "job {i}: {got} rounds for {planned}"
        );
    }
}

#[test]
fn backfill_fills_leftover_gpus_in_the_given_order() {
    let shares = [0.0, 0.0, 0.0, 0.0, 1.0, 1.0];
    let gangs = [2, 4, 2];
    let supply = [8.0, 8.0];
    let order = [1, 0];
    let input = RoundingInput {
        jobs: 3,
        rounds: 2,
        types: 1,
        shares: &shares,
        gang_sizes: &gangs,
        supply: &supply,
        backfill_order: Some(&order),
        deficit: None,
    };
    let schedule = round_schedule(&input);
    assert_eq!(schedule, Ok(vec![true, true, true, true, true, true]));
    let tight = [6.0, 6.0];
    let input = RoundingInput {
        supply: &tight,
        ..input
    };
    // Job 2 is planned (2 GPUs); job 1 (4 GPUs) fits next; job 0 finds no room.
    assert_eq!(
        round_schedule(&input),
        Ok(vec![false, false, true, true, true, true])
    );
}

/// The bits a solve's caller sees: shares, prices, gap and iteration counts.
fn solution_bits(s: &MarketSolution) -> (Vec<u64>, Vec<u64>, u64, [usize; 3]) {
    (
        s.shares.iter().map(|x| x.to_bits()).collect(),
        s.prices.iter().map(|x| x.to_bits()).collect(),
        s.gap.to_bits(),
        [s.iterations, s.pr_iterations, s.ipm_iterations],
    )
}

#[test]
fn any_number_of_threads_gives_the_same_bits() {
    // Markets below and above the threshold (128 jobs per thread; 1,800 jobs take all of 7
    // threads), windows of the fixed width (T = 20) and not, with and without ceilings, one GPU
    // type and two or three, cold and warm.
    let cases = [
        (100, 20, 1, 11),
        (700, 20, 1, 12),
        (1_030, 13, 1, 13),
        (1_800, 20, 1, 14),
        (600, 20, 3, 15),
        (1_000, 9, 2, 16),
    ];
    for (jobs, rounds, types, seed) in cases {
        let mut m = if types == 1 {
            Market::random(jobs, rounds, seed)
        } else {
            Market::random_typed(jobs, rounds, types, seed)
        };
        if seed == 13 {
            m.ceilings.fill(f64::INFINITY);
        }
        let solve_with = |threads: usize, m: &Market, warm: Option<&[f64]>| {
            let settings = SolverSettings {
                tol: 1e-8,
                threads,
                ..SolverSettings::default()
            };
            match solve(&m.problem(), &settings, warm) {
                Ok(s) => s,
                Err(e) => panic!("{e}"),
            }
        };
        let cold = solve_with(1, &m, None);
        let next = m.next_round(&cold);
        let bids = match shift_bids(&cold.bids, jobs, rounds, types, 1) {
            Ok(b) => b,
            Err(e) => panic!("{e}"),
        };
        let warm = solve_with(1, &next, Some(&bids));
        for threads in [2, 7, 0] {
            let label = format!("{jobs}x{rounds}x{types}, {threads} threads");
            assert_eq!(
                solution_bits(&solve_with(threads, &m, None)),
                solution_bits(&cold),
                "{label}"
            );
            assert_eq!(
                solution_bits(&solve_with(threads, &next, Some(&bids))),
                solution_bits(&warm),
                "{label}, warm"
            );
        }
    }
}

#[test]
fn threads_are_checked() {
    let m = Market::random(10, 4, 1);
    let settings = SolverSettings {
        threads: MAX_THREADS + 1,
        ..SolverSettings::default()
    };
    let error = solve(&m.problem(), &settings, None).err();
    assert_eq!(error.map(|e| e.argument), Some("threads".to_string()));
}
