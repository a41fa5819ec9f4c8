//! Turns the load generator's lines into the report: per mode and concurrency, each server's
//! medians over rounds, and ours÷rmcp as the median of the per-round ratios (both servers of
//! a round ran back to back, so a ratio cancels most of the noise other work puts on the box).

use std::collections::BTreeMap;

/// One load run: `<round> <server> <mode> <load output>`.
struct Run {
    round: u32,
    server: String,
    mode: String,
    concurrency: u64,
    rps: f64,
    p50_us: f64,
    p99_us: f64,
    cpu_us: f64,
    user_us: f64,
    system_us: f64,
    errors: f64,
}

fn parse_line(line: &str) -> Result<Option<Run>, String> {
    let mut fields = line.splitn(4, ' ');
    let (Some(round), Some(server), Some(mode), Some(json)) =
        (fields.next(), fields.next(), fields.next(), fields.next())
    else {
        return Ok(None);
    };
    let value: serde_json::Value =
        serde_json::from_str(json).map_err(|error| format!("{error}: {line}"))?;
    let number = |key: &str| value[key].as_f64().ok_or(format!("no {key} in {line}"));
    Ok(Some(Run {
        round: round.parse().map_err(|_| format!("round in {line}"))?,
        server: server.to_owned(),
        mode: mode.to_owned(),
        concurrency: number("concurrency")? as u64,
        rps: number("rps")?,
        p50_us: number("p50_us")?,
        p99_us: number("p99_us")?,
        cpu_us: number("cpu_us_per_req")?,
        user_us: number("user_us_per_req")?,
        system_us: number("sys_us_per_req")?,
        errors: number("errors")?,
    }))
}

fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    match sorted.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

/// The runs of one server at one mode and concurrency, by round.
type Rounds<'a> = BTreeMap<u32, &'a Run>;

fn medians(rounds: &Rounds<'_>, field: fn(&Run) -> f64) -> f64 {
    median(&rounds.values().map(|run| field(run)).collect::<Vec<_>>())
}

/// The median over rounds both servers ran of ours÷theirs.
fn ratio(ours: &Rounds<'_>, theirs: &Rounds<'_>, field: fn(&Run) -> f64) -> f64 {
    let ratios: Vec<f64> = ours
        .iter()
        .filter_map(|(round, run)| theirs.get(round).map(|other| field(run) / field(other)))
        .collect();
    median(&ratios)
}

pub fn summarize(file: &str) -> Result<(), String> {
    let text = std::fs::read_to_string(file).map_err(|error| error.to_string())?;
    let mut runs = Vec::new();
    for line in text.lines() {
        if let Some(run) = parse_line(line)? {
            runs.push(run);
        }
    }
    let mut table: BTreeMap<(String, u64), BTreeMap<String, Rounds<'_>>> = BTreeMap::new();
    for run in &runs {
        table
            .entry((run.mode.clone(), run.concurrency))
            .or_default()
            .entry(run.server.clone())
            .or_default()
            .insert(run.round, run);
    }
    println!(
        "| mode | conc. | server | rounds | req/s | p50 µs | p99 µs | server CPU µs/req (user + system) | wrong answers |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for ((mode, concurrency), servers) in &table {
        for (server, rounds) in servers {
            println!(
                "| {mode} | {concurrency} | {server} | {} | {:.0} | {:.0} | {:.0} | {:.1} ({:.1} + {:.1}) | {:.0} |",
                rounds.len(),
                medians(rounds, |run| run.rps),
                medians(rounds, |run| run.p50_us),
                medians(rounds, |run| run.p99_us),
                medians(rounds, |run| run.cpu_us),
                medians(rounds, |run| run.user_us),
                medians(rounds, |run| run.system_us),
                rounds.values().map(|run| run.errors).sum::<f64>(),
            );
        }
    }
    println!();
    println!(
        "| mode | conc. | throughput ours÷rmcp | p50 ours÷rmcp | p99 ours÷rmcp | CPU/req ours÷rmcp |"
    );
    println!("|---|---|---|---|---|---|");
    for ((mode, concurrency), servers) in &table {
        let (Some(ours), Some(theirs)) = (servers.get("ours"), servers.get("rmcp")) else {
            continue;
        };
        println!(
            "| {mode} | {concurrency} | {:.2} | {:.2} | {:.2} | {:.2} |",
            ratio(ours, theirs, |run| run.rps),
            ratio(ours, theirs, |run| run.p50_us),
            ratio(ours, theirs, |run| run.p99_us),
            ratio(ours, theirs, |run| run.cpu_us),
        );
    }
    Ok(())
}
