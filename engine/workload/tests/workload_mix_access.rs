//! Custom statement mixes (parsing, refusals) and key access distributions.

use rand::rngs::SmallRng;
use rand::SeedableRng;
use redoctor_workload::{KeyDist, KeySampler, Mix, MixError, Statement, WorkloadKind};

#[test]
fn mixes_parse_from_flags_and_files() {
    let m = Mix::parse("point_select=10,update_index=1,insert=1").unwrap();
    assert_eq!(m.count(Statement::PointSelect), 10);
    assert_eq!(m.count(Statement::UpdateIndex), 1);
    assert_eq!(m.count(Statement::Insert), 1);
    assert_eq!(m.count(Statement::SumRange), 0);
    assert_eq!(m.total(), 12);
    assert!(!m.is_read_only());
    // Canonical text is in execution order and parses back.
    let m2 = Mix::parse(" insert = 1 ,\n point_select=10 # hot reads\nupdate_index=1\n").unwrap();
    assert_eq!(m, m2);
    assert_eq!(m2.to_string(), "point_select=10,update_index=1,insert=1");
    assert_eq!(Mix::parse(&m2.to_string()).unwrap(), m2);
    // A zero count is allowed next to others.
    let ro = Mix::parse("point_select=2,update_index=0").unwrap();
    assert!(ro.is_read_only());
    // The named OLTP_RW mix written out.
    let rw = WorkloadKind::ReadWrite.mix().unwrap();
    assert_eq!(
        rw.to_string(),
        "point_select=10,simple_range=1,sum_range=1,order_range=1,distinct_range=1,update_index=1,update_non_index=1,delete_insert=1"
    );
    assert_eq!(rw.total(), 17);
}

#[test]
fn malformed_mixes_are_refused_with_the_cause() {
    type Check = fn(&MixError) -> bool;
    let cases: [(&str, Check); 8] = [
        ("", |e| *e == MixError::Empty),
        ("# only a comment\n , ,", |e| *e == MixError::Empty),
        (
            "point_select",
            |e| matches!(e, MixError::NotAPair(s) if s == "point_select"),
        ),
        (
            "point_selects=1",
            |e| matches!(e, MixError::UnknownStatement(s) if s == "point_selects"),
        ),
        ("point_select=-1", |e| {
            matches!(e, MixError::BadCount { .. })
        }),
        ("point_select=99999", |e| {
            matches!(e, MixError::BadCount { .. })
        }),
        (
            "insert=1,insert=2",
            |e| matches!(e, MixError::Duplicate(s) if s == "insert"),
        ),
        ("insert=0", |e| *e == MixError::AllZero),
    ];
    for (text, check) in cases {
        let e = Mix::parse(text).unwrap_err();
        assert!(check(&e), "{text:?} gave {e:?}");
        assert!(!e.to_string().is_empty());
    }
    let e = Mix::parse("point_selects=1").unwrap_err().to_string();
    assert!(
        e.contains("point_select,"),
        "the error lists the valid names: {e}"
    );
}

#[test]
fn key_distributions_parse() {
    assert_eq!("uniform".parse::<KeyDist>().unwrap(), KeyDist::Uniform);
    assert_eq!("zipf".parse::<KeyDist>().unwrap(), KeyDist::Zipf { s: 0.8 });
    assert_eq!(
        "zipf:1.2".parse::<KeyDist>().unwrap(),
        KeyDist::Zipf { s: 1.2 }
    );
    assert_eq!(
        "pareto".parse::<KeyDist>().unwrap(),
        KeyDist::Pareto { h: 0.2 }
    );
    for bad in [
        "gauss",
        "zipf:0",
        "zipf:x",
        "pareto:1",
        "pareto:0",
        "uniform:3",
    ] {
        assert!(bad.parse::<KeyDist>().is_err(), "{bad}");
    }
    for d in ["uniform", "zipf:0.8", "pareto:0.3"] {
        assert_eq!(d.parse::<KeyDist>().unwrap().to_string(), d);
    }
}

fn histogram(dist: KeyDist, n: u64, draws: usize) -> Vec<u64> {
    let sampler = KeySampler::new(dist, n);
    let mut rng = SmallRng::seed_from_u64(11);
    let mut h = vec![0u64; n as usize + 1];
    for _ in 0..draws {
        let id = sampler.sample(&mut rng);
        assert!((1..=n as i64).contains(&id), "{id} outside 1..={n}");
        h[id as usize] += 1;
    }
    h
}

#[test]
fn zipf_frequencies_follow_the_power_law() {
    // P(rank r) ∝ 1/r^s: with s = 1, rank 1 is drawn twice as often as rank 2
    // and ten times as often as rank 10.
    let h = histogram(KeyDist::Zipf { s: 1.0 }, 1000, 400_000);
    let r2 = h[1] as f64 / h[2] as f64;
    let r10 = h[1] as f64 / h[10] as f64;
    assert!((1.85..2.15).contains(&r2), "f(1)/f(2) = {r2}");
    assert!((8.8..11.3).contains(&r10), "f(1)/f(10) = {r10}");
    // Harmonic number H(1000) ≈ 7.485: rank 1 gets ~13.4 % of the draws.
    let p1 = h[1] as f64 / 400_000.0;
    assert!((0.125..0.143).contains(&p1), "p(1) = {p1}");
    // A larger exponent is more skewed.
    let steep = histogram(KeyDist::Zipf { s: 1.5 }, 1000, 100_000);
    assert!(steep[1] as f64 / 100_000.0 > 0.3);
}

#[test]
fn uniform_and_pareto_shapes() {
    let n = 100;
    let h = histogram(KeyDist::Uniform, n, 200_000);
    let (min, max) = h[1..]
        .iter()
        .fold((u64::MAX, 0), |(a, b), &x| (a.min(x), b.max(x)));
    assert!(min > 1700 && max < 2300, "uniform counts {min}..{max}");
    // Pareto h: a fraction h of the keys gets 1 - h of the accesses.
    let h = histogram(KeyDist::Pareto { h: 0.2 }, 1000, 200_000);
    let hot: u64 = h[1..=200].iter().sum();
    let share = hot as f64 / 200_000.0;
    assert!(
        (0.78..0.82).contains(&share),
        "first 20 % of keys got {share}"
    );
}
