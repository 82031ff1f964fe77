//! A sweep plan: the TOML file, read and checked whole before anything
//! runs, then expanded into points (the cartesian product of the axes,
//! the first axis outermost). docs/sweeps.md describes every key.
//!
//! ```toml
//! label = "tmpfs, 1 node"           # the series' name in the store
//! tool = "mdtest"                   # mdtest, xdd, lst or survey
//! args = "-F -C -T -r -d /mnt/fs/sweep"   # fixed options (a line or a list)
//! repeats = 3                       # runs per point [3]
//! launcher = "mpirun -n {ranks} --oversubscribe {iolab}"   # optional
//! sync = true                       # sync(2) before each repeat [false]
//! x = ["ranks", "tasks"]            # chart x: the product of these axes
//! x_label = "client threads"
//!
//! [[axes]]
//! name = "dir"
//! option = "-u"                     # a flag: present for true
//! values = [true, false]
//! labels = ["private", "shared"]
//!
//! [[axes]]
//! name = "ranks"                    # no option: the launcher uses {ranks}
//! values = [1, 2]
//!
//! [[axes]]
//! name = "tasks"
//! option = "--tasks"
//! values = [1, 2, 4]
//!
//! [split]                           # -n = 262144 / (ranks x tasks)
//! option = "-n"
//! total = 262144
//! over = ["ranks", "tasks"]
//! ```

use serde::Deserialize;
use serde_json::{Map, Value};

/// The tools a plan may sweep.
pub const TOOLS: &[&str] = &["mdtest", "xdd", "lst", "survey"];

/// Options the sweep sets itself (without their dashes), so a plan may
/// not: each repeat's JSON is the sweep's, and the sweep records it.
const OWN_OPTIONS: &[&str] = &["json", "store"];

/// Most repeats per point.
pub const MAX_REPEATS: u32 = 1000;

/// Most points in a plan.
pub const MAX_POINTS: usize = 100_000;

/// A plan that cannot run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PlanError {
    /// Not TOML, or keys and types no plan has: the TOML reader's
    /// message, whose lines (the plan's line quoted, a caret under the
    /// column) are meant to be printed as lines.
    #[error("{0}")]
    Toml(String),
    /// Anything else, on one line, naming the key at fault.
    #[error("{0}")]
    Bad(String),
}

fn err<T>(msg: impl Into<String>) -> Result<T, PlanError> {
    Err(PlanError::Bad(msg.into()))
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Words {
    Line(String),
    List(Vec<String>),
}

impl Words {
    fn into_vec(self) -> Vec<String> {
        match self {
            Words::Line(s) => s.split_whitespace().map(String::from).collect(),
            Words::List(v) => v,
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPlan {
    label: String,
    tool: String,
    args: Option<Words>,
    repeats: Option<u32>,
    launcher: Option<String>,
    x: Option<Words>,
    x_label: Option<String>,
    timeout_s: Option<f64>,
    sync: Option<bool>,
    description: Option<String>,
    #[serde(default)]
    axes: Vec<RawAxis>,
    split: Option<RawSplit>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAxis {
    name: String,
    option: Option<String>,
    values: Vec<AxisValue>,
    labels: Option<Vec<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSplit {
    option: String,
    total: u64,
    over: Vec<String>,
}

/// One value of an axis.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(
    untagged,
    expecting = "an axis value: a whole number (2), text (\"4k\"), true or false, or a list of words ([\"-targets\", \"2\", \"a\", \"b\"]); a decimal such as 1.5 is not one: give it as text"
)]
pub enum AxisValue {
    /// A flag: the option is given (true) or not (false).
    Flag(bool),
    /// A whole number.
    Int(i64),
    /// Any text.
    Text(String),
    /// Several words, added as they are (after the option, if any): a
    /// value that is more than one option or word, such as xdd's
    /// `-targets 2 f0 f1`, whose length follows the point.
    Words(Vec<String>),
}

impl AxisValue {
    fn text(&self) -> String {
        match self {
            AxisValue::Flag(b) => b.to_string(),
            AxisValue::Int(i) => i.to_string(),
            AxisValue::Text(s) => s.clone(),
            AxisValue::Words(w) => w.join(" "),
        }
    }

    fn json(&self) -> Value {
        match self {
            AxisValue::Flag(b) => Value::Bool(*b),
            AxisValue::Int(i) => Value::from(*i),
            AxisValue::Text(s) => Value::String(s.clone()),
            AxisValue::Words(w) => Value::from(w.clone()),
        }
    }
}

/// One axis: a name, the option it sets (if any), its values.
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    /// Its name (in keys, placeholders, `x` and `split`).
    pub name: String,
    /// The option it sets, or none (used through `{name}`).
    pub option: Option<String>,
    /// Its values, in order.
    pub values: Vec<AxisValue>,
    /// How each value is shown (the value itself unless `labels`).
    pub labels: Vec<String>,
}

impl Axis {
    /// Whether its values are word lists (then all of them are).
    fn is_words(&self) -> bool {
        matches!(self.values.first(), Some(AxisValue::Words(_)))
    }

    /// Whether it counts something: whole numbers above 0, or word
    /// lists labelled with such numbers (`-targets 2 a b` labelled `2`).
    fn counts(&self) -> bool {
        let whole = |s: &str| s.parse::<i64>().is_ok_and(|n| n > 0);
        match self.is_words() {
            true => self.labels.iter().all(|l| whole(l)),
            false => self
                .values
                .iter()
                .all(|v| matches!(v, AxisValue::Int(n) if *n > 0)),
        }
    }
}

/// `option = total / product(over)`: a total split over the tasks.
#[derive(Debug, Clone, PartialEq)]
pub struct Split {
    /// The option set.
    pub option: String,
    /// The total.
    pub total: u64,
    /// Indexes of the axes whose values divide it.
    pub over: Vec<usize>,
}

/// A checked plan.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// The plan as written.
    pub text: String,
    /// The series' label.
    pub label: String,
    /// The tool (and, for `lst`/`survey`, the first words of `args`).
    pub tool: String,
    /// Fixed options.
    pub args: Vec<String>,
    /// Runs per point.
    pub repeats: u32,
    /// Launcher words (with `{iolab}`), if any.
    pub launcher: Option<Vec<String>>,
    /// Axes on the chart's x (their values multiply).
    pub x: Vec<usize>,
    /// The chart's x label.
    pub x_label: String,
    /// Longest a repeat may run, seconds.
    pub timeout_s: Option<f64>,
    /// Flush this host's dirty data (sync(2)) before each repeat, so that
    /// a run does not pay for the writeback of the one before it.
    pub sync: bool,
    /// Free text.
    pub description: Option<String>,
    /// The axes.
    pub axes: Vec<Axis>,
    /// The split total, if any.
    pub split: Option<Split>,
}

/// One point of a plan.
#[derive(Debug, Clone, PartialEq)]
pub struct PointSpec {
    /// Order in the plan (from 0).
    pub idx: usize,
    /// `name=value` of every axis, space separated.
    pub key: String,
    /// The same for the axes off the x axis.
    pub line: String,
    /// Position on the x axis.
    pub x: f64,
    /// Every axis' value.
    pub axes: Value,
    /// Index of each axis' value.
    values: Vec<usize>,
}

/// An option a point's command line gives, as the tool's parser read it:
/// the index of the word it starts at, and the option named the same in
/// every spelling (`-n` for `-n4`, `-n=4` and `-n 4`; `-u` of `-FCu`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Given {
    /// Index of its word in the arguments checked.
    pub word: usize,
    /// The option.
    pub option: String,
}

/// What checks that the tool accepts a command line (a dry parse by the
/// tool's own parser), given by the binary that knows the tools.
pub trait ToolCheck {
    /// `Err(message)` when `tool` refuses `args`. `alone`: the run is
    /// iolab itself, one process (no launcher), so the checks that need
    /// the number of processes can be made. Returns the options `args`
    /// give ([`Given`]), in order; none for a tool whose parser refuses
    /// an option given twice itself.
    fn check(&self, tool: &str, args: &[String], alone: bool) -> Result<Vec<Given>, String>;
}

/// The part of the plan a word of a point's command line comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    Args,
    Axis(usize),
    Split,
    /// `--json FILE`, which the sweep adds.
    Sweep,
}

/// The label `series:` would name in `iolab results` and `report`.
const SERIES_PREFIX: &str = "series:";

impl Plan {
    /// Reads and checks a plan's structure (not yet the tool's options:
    /// [`Plan::check_points`]).
    pub fn parse(text: &str) -> Result<Plan, PlanError> {
        let raw: RawPlan = toml::from_str(text).map_err(|e| PlanError::Toml(e.to_string()))?;
        let axes = axes(raw.axes)?;
        let x = x_axes(raw.x.map(Words::into_vec), &axes)?;
        let x_label = raw.x_label.unwrap_or_else(|| match x.is_empty() {
            true => "point".to_string(),
            false => x
                .iter()
                .map(|&i| axes[i].name.as_str())
                .collect::<Vec<_>>()
                .join(" x "),
        });
        let plan = Plan {
            text: text.to_string(),
            label: nonempty("label", raw.label)?,
            tool: tool(raw.tool)?,
            args: raw.args.map(Words::into_vec).unwrap_or_default(),
            repeats: repeats(raw.repeats)?,
            launcher: launcher(raw.launcher)?,
            split: raw.split.map(|s| split(s, &axes)).transpose()?,
            timeout_s: timeout(raw.timeout_s)?,
            sync: raw.sync.unwrap_or(false),
            description: raw.description,
            x,
            x_label,
            axes,
        };
        plan.check_words()?;
        Ok(plan)
    }

    /// Every point, in order.
    pub fn points(&self) -> Vec<PointSpec> {
        let mut out = Vec::new();
        let mut values = vec![0usize; self.axes.len()];
        // At most MAX_POINTS: checked when the plan was read.
        let count = self.point_count().unwrap_or(0);
        for idx in 0..count {
            let mut rest = idx;
            for (i, a) in self.axes.iter().enumerate().rev() {
                values[i] = rest % a.values.len();
                rest /= a.values.len();
            }
            out.push(self.point(idx, &values));
        }
        out
    }

    /// How many points the axes make; None past `usize` (9 axes of 256
    /// values are 2^72).
    fn point_count(&self) -> Option<usize> {
        self.axes
            .iter()
            .try_fold(1usize, |n, a| n.checked_mul(a.values.len()))
    }

    fn point(&self, idx: usize, values: &[usize]) -> PointSpec {
        let part = |i: usize| format!("{}={}", self.axes[i].name, self.axes[i].labels[values[i]]);
        let all: Vec<String> = (0..self.axes.len()).map(part).collect();
        let line: Vec<String> = (0..self.axes.len())
            .filter(|i| !self.x.contains(i))
            .map(part)
            .collect();
        let x = match self.x.is_empty() {
            true => (idx + 1) as f64,
            false => self.x.iter().map(|&i| self.int(i, values) as f64).product(),
        };
        let mut axes = Map::new();
        for (i, a) in self.axes.iter().enumerate() {
            axes.insert(a.name.clone(), a.values[values[i]].json());
        }
        PointSpec {
            idx,
            key: all.join(" "),
            line: line.join(" "),
            x,
            axes: Value::Object(axes),
            values: values.to_vec(),
        }
    }

    fn int(&self, axis: usize, values: &[usize]) -> i64 {
        let a = &self.axes[axis];
        match a.values[values[axis]] {
            AxisValue::Int(i) => i,
            // A list axis counts by its label (whole numbers: checked).
            AxisValue::Words(_) => a.labels[values[axis]].parse().unwrap_or(0),
            _ => 0,
        }
    }

    /// What identifies the measurement: a rerun with the same key resumes
    /// the series (repeats, launcher, timeout and texts may change).
    pub fn key(&self) -> String {
        let axes: Vec<Value> = self
            .axes
            .iter()
            .map(|a| {
                serde_json::json!({"name": a.name, "option": a.option,
                    "values": a.values.iter().map(AxisValue::json).collect::<Vec<_>>(), "labels": a.labels})
            })
            .collect();
        let split = self.split.as_ref().map(|s| {
            serde_json::json!({"option": s.option, "total": s.total,
                "over": s.over.iter().map(|&i| &self.axes[i].name).collect::<Vec<_>>()})
        });
        serde_json::json!({"tool": self.tool, "args": self.args, "axes": axes, "split": split})
            .to_string()
    }

    /// The tool's arguments at `p` for repeat `repeat` (placeholders
    /// filled), without the sweep's `--json`.
    pub fn tool_args(&self, p: &PointSpec, repeat: u32) -> Result<Vec<String>, PlanError> {
        Ok(self.words(p, repeat)?.into_iter().map(|(w, _)| w).collect())
    }

    /// [`Plan::tool_args`], each word with the part of the plan it comes
    /// from.
    fn words(&self, p: &PointSpec, repeat: u32) -> Result<Vec<(String, Part)>, PlanError> {
        let mut out = Vec::new();
        for w in &self.args {
            out.push((self.fill(w, p, repeat, None)?, Part::Args));
        }
        for (i, a) in self.axes.iter().enumerate() {
            let part = Part::Axis(i);
            match (&a.option, &a.values[p.values[i]]) {
                (opt, AxisValue::Words(words)) => {
                    out.extend(opt.iter().map(|o| (o.clone(), part)));
                    for w in words {
                        out.push((self.fill(w, p, repeat, None)?, part));
                    }
                }
                (None, _) | (Some(_), AxisValue::Flag(false)) => {}
                (Some(opt), AxisValue::Flag(true)) => out.push((opt.clone(), part)),
                (Some(opt), v) => out.extend([(opt.clone(), part), (v.text(), part)]),
            }
        }
        if let Some(s) = &self.split {
            // Checked when the plan was read ([`split`]): no overflow.
            let per: i64 = s
                .over
                .iter()
                .map(|&i| self.int(i, &p.values))
                .fold(1i64, |a, b| a.saturating_mul(b));
            let value = s.total / per.max(1) as u64;
            if value == 0 {
                return err(format!(
                    "split: {} / {per} is less than 1 at point {} ({}); raise total",
                    s.total, p.idx, p.key
                ));
            }
            out.extend([
                (s.option.clone(), Part::Split),
                (value.to_string(), Part::Split),
            ]);
        }
        Ok(out)
    }

    /// How a part of the plan is named in messages.
    fn part_name(&self, part: Part) -> String {
        match part {
            Part::Args => "args".into(),
            Part::Axis(i) => format!("axis '{}'", self.axes[i].name),
            Part::Split => "split".into(),
            Part::Sweep => "the sweep".into(),
        }
    }

    /// The whole command line of a repeat: the launcher (or `iolab`),
    /// the tool, its arguments and `--json JSON`.
    pub fn command(
        &self,
        iolab: &str,
        p: &PointSpec,
        repeat: u32,
        json: &str,
    ) -> Result<Vec<String>, PlanError> {
        let mut argv = match &self.launcher {
            Some(words) => words
                .iter()
                .map(|w| self.fill(w, p, repeat, Some(iolab)))
                .collect::<Result<Vec<_>, _>>()?,
            None => vec![iolab.to_string()],
        };
        argv.push(self.tool.clone());
        argv.extend(self.tool_args(p, repeat)?);
        argv.extend(["--json".to_string(), json.to_string()]);
        Ok(argv)
    }

    /// Fills `{axis}`, `{repeat}`, `{point}` and (in the launcher)
    /// `{iolab}`; `{{` and `}}` are literal braces.
    fn fill(
        &self,
        w: &str,
        p: &PointSpec,
        repeat: u32,
        iolab: Option<&str>,
    ) -> Result<String, PlanError> {
        fill(w, |name| match name {
            "repeat" => Some(repeat.to_string()),
            "point" => Some(p.idx.to_string()),
            "iolab" => iolab.map(String::from),
            _ => self
                .axes
                .iter()
                .position(|a| a.name == name)
                .map(|i| self.axes[i].values[p.values[i]].text()),
        })
    }

    /// An axis's option is not also fixed in `args` (the axis's value
    /// came last and silently won), and its values (labels) are each
    /// given once (two equal ones made one point, its runs counted as
    /// more repeats than the plan has).
    fn axes_stand_alone(&self) -> Result<(), PlanError> {
        for a in &self.axes {
            if let Some(opt) = &a.option {
                let fixed = self
                    .args
                    .iter()
                    .find(|w| w.split('=').next() == Some(opt.as_str()));
                if let Some(w) = fixed {
                    return err(format!(
                        "args: {w} is also axis '{}'s option {opt}; the axis would override it: remove it from args",
                        a.name
                    ));
                }
            }
            if let Some((i, dup)) = a
                .labels
                .iter()
                .enumerate()
                .find(|(i, l)| a.labels[..*i].contains(l))
            {
                return err(format!(
                    "axes '{}': value {dup:?} is given twice (value {}); give each value once",
                    a.name,
                    i + 1
                ));
            }
        }
        Ok(())
    }

    /// Placeholders known, own options absent, option-less axes used.
    fn check_words(&self) -> Result<(), PlanError> {
        match self.point_count() {
            Some(n) if n <= MAX_POINTS => {}
            n => {
                return err(format!(
                    "the axes make {} points; at most {MAX_POINTS}",
                    n.map_or("more than 2^64".to_string(), |n| n.to_string())
                ))
            }
        }
        if let Some(c) = self
            .label
            .chars()
            .find(|&c| iolab_core::text::unprintable(c))
        {
            return err(format!(
                "label: {:?} holds the control character U+{:04X}; the label is named on command lines (`iolab results show LABEL`, `iolab report LABEL`), where it cannot be typed or printed as it is: give a label without one",
                self.label, c as u32
            ));
        }
        if self.label.starts_with(SERIES_PREFIX) {
            return err(format!(
                "label: '{}' starts with '{SERIES_PREFIX}', which `iolab results` and `report` read as the prefix of a label, not part of it: give a label without it",
                self.label
            ));
        }
        let probe = self.point(0, &vec![0; self.axes.len()]);
        let axis_words = self.axes.iter().flat_map(|a| {
            a.option.iter().chain(a.values.iter().flat_map(|v| match v {
                AxisValue::Words(w) => w.as_slice(),
                _ => &[],
            }))
        });
        let words = self.args.iter().chain(axis_words);
        for w in words.chain(self.split.iter().map(|s| &s.option)) {
            if let Some(name) = own_option(w) {
                return err(format!("{w}: the sweep writes each run's JSON and records it itself; remove {name} from the plan"));
            }
        }
        self.axes_stand_alone()?;
        self.tool_args(&probe, 1)
            .map_err(|e| PlanError::Bad(format!("args: {e}")))?;
        let launcher = self.launcher.as_deref().unwrap_or(&[]);
        if !launcher.is_empty() && !launcher.iter().any(|w| w.contains("{iolab}")) {
            return err("launcher: it must contain {iolab}, where the iolab command goes (e.g. \"mpirun -n {ranks} {iolab}\")");
        }
        for w in launcher {
            self.fill(w, &probe, 1, Some("iolab"))
                .map_err(|e| PlanError::Bad(format!("launcher: {e}")))?;
        }
        for a in self
            .axes
            .iter()
            .filter(|a| a.option.is_none() && !a.is_words())
        {
            let used = launcher
                .iter()
                .chain(&self.args)
                .any(|w| w.contains(&format!("{{{}}}", a.name)));
            if !used {
                return err(format!("axes: '{}' has no option and neither the launcher nor args use {{{}}}: give it an option or use it", a.name, a.name));
            }
        }
        Ok(())
    }

    /// Every point's command line through the tool's own parser, and the
    /// split's value at every point, before anything runs; no option set
    /// by two parts of the plan (args, an axis, the split, the sweep's
    /// `--json`), as the tool reads the line: the later would silently
    /// override the earlier (`-FCTru` in args and an axis `-u`, `-n4`
    /// and a split `-n`, two axes of `--tasks`).
    pub fn check_points(&self, checker: &dyn ToolCheck) -> Result<(), PlanError> {
        let alone = self.launcher.is_none();
        for p in self.points() {
            let mut words = self.words(&p, 1)?;
            words.extend([
                ("--json".to_string(), Part::Sweep),
                ("sweep.json".to_string(), Part::Sweep),
            ]);
            let args: Vec<String> = words.iter().map(|(w, _)| w.clone()).collect();
            let given = checker.check(&self.tool, &args, alone).map_err(|e| {
                PlanError::Bad(format!(
                    "point {} ({}): {} refuses its options: {e}",
                    p.idx, p.key, self.tool
                ))
            })?;
            self.set_once(&p, &words, &given)?;
        }
        Ok(())
    }

    /// No option of `given` comes from two parts of the plan.
    fn set_once(
        &self,
        p: &PointSpec,
        words: &[(String, Part)],
        given: &[Given],
    ) -> Result<(), PlanError> {
        let at = |g: &Given| {
            words
                .get(g.word)
                .map_or(("", Part::Sweep), |(w, part)| (w.as_str(), *part))
        };
        for (i, g) in given.iter().enumerate() {
            let (word, part) = at(g);
            let earlier = given[..i]
                .iter()
                .find(|h| h.option == g.option && at(h).1 != part);
            let Some((first, first_part)) = earlier.map(at) else {
                continue;
            };
            let head = format!(
                "point {} ({}): {} is set by {} ({first}) and by {} ({word})",
                p.idx,
                p.key,
                g.option,
                self.part_name(first_part),
                self.part_name(part)
            );
            return err(match part {
                Part::Sweep => format!(
                    "{head}: the sweep writes each run's JSON itself; remove it from the plan"
                ),
                _ => format!(
                    "{head}: the later would silently override the earlier; set it in one place"
                ),
            });
        }
        Ok(())
    }
}

/// The option the sweep sets itself that word `w` is, if any (`--json`,
/// `--store=x`; xdd reads its options in any case and with any number
/// of dashes, so `-JSON` and `---store` too).
fn own_option(w: &str) -> Option<&str> {
    let name = w.split('=').next().unwrap_or("");
    let bare = name.trim_start_matches('-');
    let dashed = bare.len() < name.len();
    (dashed && OWN_OPTIONS.contains(&bare.to_ascii_lowercase().as_str())).then_some(name)
}

/// Replaces `{name}` with `lookup(name)`; an unknown name is an error.
pub fn fill(w: &str, lookup: impl Fn(&str) -> Option<String>) -> Result<String, PlanError> {
    let mut out = String::new();
    let mut rest = w;
    while let Some(i) = rest.find(['{', '}']) {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        if tail.starts_with("{{") || tail.starts_with("}}") {
            out.push_str(&tail[..1]);
            rest = &tail[2..];
            continue;
        }
        let Some(end) = tail.find('}').filter(|_| tail.starts_with('{')) else {
            return err(format!(
                "'{w}': unmatched brace (write {{{{ or }}}} for a literal one)"
            ));
        };
        let name = &tail[1..end];
        match lookup(name) {
            Some(v) => out.push_str(&v),
            None => return err(format!("'{w}': unknown placeholder {{{name}}} (axes' names, {{repeat}}, {{point}}, and in the launcher {{iolab}})")),
        }
        rest = &tail[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The launcher's words; an empty one is refused (it would make the
/// tool's name the program to run).
fn launcher(l: Option<String>) -> Result<Option<Vec<String>>, PlanError> {
    match l {
        Some(l) if l.trim().is_empty() => Err(PlanError::Bad(
            "launcher: \"\": empty; remove the line to run iolab directly, or give a command containing {iolab} (e.g. \"mpirun -n {ranks} {iolab}\")".into(),
        )),
        l => Ok(l.map(|l| l.split_whitespace().map(String::from).collect())),
    }
}

fn nonempty(key: &str, v: String) -> Result<String, PlanError> {
    match v.trim().is_empty() {
        true => err(format!("{key}: must not be empty")),
        false => Ok(v),
    }
}

fn tool(t: String) -> Result<String, PlanError> {
    match TOOLS.contains(&t.as_str()) {
        true => Ok(t),
        false => err(format!(
            "tool: '{t}' is not a tool a sweep can run (one of: {})",
            TOOLS.join(", ")
        )),
    }
}

fn repeats(r: Option<u32>) -> Result<u32, PlanError> {
    match r.unwrap_or(3) {
        r @ 1..=MAX_REPEATS => Ok(r),
        r => err(format!("repeats: {r} is not in 1..{MAX_REPEATS}")),
    }
}

fn timeout(t: Option<f64>) -> Result<Option<f64>, PlanError> {
    match t {
        Some(s) if !(s > 0.0 && s <= 1e8) => err(format!(
            "timeout_s: {s} is not a number of seconds in (0, 1e8]"
        )),
        t => Ok(t),
    }
}

fn axes(raw: Vec<RawAxis>) -> Result<Vec<Axis>, PlanError> {
    let mut out: Vec<Axis> = Vec::new();
    for a in raw {
        let name = nonempty("axes.name", a.name)?;
        if !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return err(format!(
                "axes: '{name}': a name is letters, digits, '_' and '-'"
            ));
        }
        if ["repeat", "point", "iolab"].contains(&name.as_str())
            || out.iter().any(|o| o.name == name)
        {
            return err(format!("axes: the name '{name}' is taken (repeat, point and iolab are placeholders; names are unique)"));
        }
        if a.values.is_empty() {
            return err(format!("axes: '{name}' has no values"));
        }
        let flags = a
            .values
            .iter()
            .filter(|v| matches!(v, AxisValue::Flag(_)))
            .count();
        if flags > 0 && (flags < a.values.len() || a.option.is_none()) {
            return err(format!("axes: '{name}': true/false values turn an option on or off, so they need `option` and may not mix with other values"));
        }
        let lists = a
            .values
            .iter()
            .filter(|v| matches!(v, AxisValue::Words(w) if !w.is_empty()))
            .count();
        let any_list = a.values.iter().any(|v| matches!(v, AxisValue::Words(_)));
        if any_list && lists < a.values.len() {
            return err(format!("axes: '{name}': a list of words as a value needs every value to be a non-empty list"));
        }
        let labels = match a.labels {
            Some(l) if l.len() != a.values.len() => {
                return err(format!(
                    "axes: '{name}' has {} values but {} labels",
                    a.values.len(),
                    l.len()
                ))
            }
            Some(l) => l,
            None => a.values.iter().map(AxisValue::text).collect(),
        };
        out.push(Axis {
            name,
            option: a.option,
            values: a.values,
            labels,
        });
    }
    Ok(out)
}

fn axis_index(axes: &[Axis], key: &str, name: &str) -> Result<usize, PlanError> {
    let i = axes.iter().position(|a| a.name == name).ok_or_else(|| {
        PlanError::Bad(format!(
            "{key}: no axis named '{name}' (axes: {})",
            axes.iter()
                .map(|a| a.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))
    })?;
    if !axes[i].counts() {
        return err(format!(
            "{key}: axis '{name}' must have whole numbers above 0 (or lists of words labelled with them)"
        ));
    }
    Ok(i)
}

fn x_axes(x: Option<Vec<String>>, axes: &[Axis]) -> Result<Vec<usize>, PlanError> {
    match x {
        Some(names) => names.iter().map(|n| axis_index(axes, "x", n)).collect(),
        None => Ok(axes.iter().position(Axis::counts).into_iter().collect()),
    }
}

fn split(s: RawSplit, axes: &[Axis]) -> Result<Split, PlanError> {
    if s.over.is_empty() {
        return err("split.over: name the axes the total is divided by");
    }
    let over: Vec<usize> = s
        .over
        .iter()
        .map(|n| axis_index(axes, "split.over", n))
        .collect::<Result<_, _>>()?;
    let most: Option<i64> = over
        .iter()
        .map(|&i| {
            let a = &axes[i];
            (0..a.values.len())
                .map(|j| match &a.values[j] {
                    AxisValue::Int(n) => *n,
                    _ => a.labels[j].parse().unwrap_or(1),
                })
                .max()
                .unwrap_or(1)
        })
        .try_fold(1i64, |a, b| a.checked_mul(b));
    let Some(most) = most else {
        return err(format!(
            "split: the product of {} overflows; give smaller values",
            s.over.join(" x ")
        ));
    };
    if s.total / (most.max(1) as u64) == 0 {
        return err(format!(
            "split: total {} / {most} (the largest product of {}) is less than 1; raise total",
            s.total,
            s.over.join(" x ")
        ));
    }
    Ok(Split {
        option: nonempty("split.option", s.option)?,
        total: s.total,
        over,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEED: &str = r#"
label = "v1"
tool = "mdtest"
args = "-F -C -T -r -d /tmp/x.{repeat}"
launcher = "mpirun -n {ranks} {iolab}"
x = ["ranks", "tasks"]
[[axes]]
name = "dir"
option = "-u"
values = [true, false]
labels = ["private", "shared"]
[[axes]]
name = "ranks"
values = [1, 2]
[[axes]]
name = "tasks"
option = "--tasks"
values = [1, 4]
[split]
option = "-n"
total = 64
over = ["ranks", "tasks"]
"#;

    #[test]
    fn a_split_whose_product_overflows_is_refused() {
        let text = "label = \"t\"\ntool = \"mdtest\"\nargs = \"-F -C -d /x\"\nrepeats = 1\n\
            [[axes]]\nname = \"a\"\noption = \"--tasks\"\nvalues = [4294967296]\n\
            [[axes]]\nname = \"b\"\noption = \"-I\"\nvalues = [4294967296]\n\
            [split]\noption = \"-n\"\ntotal = 100\nover = [\"a\", \"b\"]\n";
        let e = Plan::parse(text).unwrap_err().to_string();
        assert!(e.contains("overflows"), "{e}");
    }

    #[test]
    fn points_are_the_product_of_the_axes() {
        let p = Plan::parse(SEED).unwrap();
        let pts = p.points();
        assert_eq!(pts.len(), 8);
        assert_eq!(pts[0].key, "dir=private ranks=1 tasks=1");
        assert_eq!(pts[7].key, "dir=shared ranks=2 tasks=4");
        assert_eq!((pts[7].line.as_str(), pts[7].x), ("dir=shared", 8.0));
        assert_eq!(p.x_label, "ranks x tasks");
        let argv = p.command("/bin/iolab", &pts[3], 2, "/w/j.json").unwrap();
        assert_eq!(
            argv.join(" "),
            "mpirun -n 2 /bin/iolab mdtest -F -C -T -r -d /tmp/x.2 -u --tasks 4 -n 8 --json /w/j.json"
        );
        let shared = p.command("iolab", &pts[4], 1, "j").unwrap();
        assert!(!shared.contains(&"-u".to_string()));
        assert_eq!(p.repeats, 3);
    }

    #[test]
    fn resuming_keys_ignore_repeats_but_not_options() {
        let a = Plan::parse(SEED).unwrap();
        let b =
            Plan::parse(&SEED.replace("label = \"v1\"", "label = \"v1\"\nrepeats = 5")).unwrap();
        assert_eq!(a.key(), b.key());
        let c = Plan::parse(&SEED.replace("-F -C", "-F -w 4k -C")).unwrap();
        assert_ne!(a.key(), c.key());
    }

    #[test]
    fn sync_is_off_unless_asked_and_keeps_the_resuming_key() {
        let a = Plan::parse(SEED).unwrap();
        assert!(!a.sync);
        let on = SEED.replace("label = \"v1\"", "label = \"v1\"\nsync = true");
        let b = Plan::parse(&on).unwrap();
        assert!(b.sync);
        // How the runs are run, not what they measure: a plan that gains
        // it resumes the same series.
        assert_eq!(a.key(), b.key());
        let wrong = SEED.replace("label = \"v1\"", "label = \"v1\"\nsync = \"yes\"");
        assert!(bad(&wrong).contains("sync"), "{}", bad(&wrong));
    }

    fn bad(text: &str) -> String {
        Plan::parse(text).unwrap_err().to_string()
    }

    #[test]
    fn bad_plans_name_what_is_wrong() {
        assert!(bad(&SEED.replace("tool = \"mdtest\"", "tool = \"fio\"")).contains("tool: 'fio'"));
        assert!(
            bad(&SEED.replace("[[axes]]\nname = \"ranks\"", "[[axis]]\nname = \"ranks\""))
                .contains("unknown field")
        );
        assert!(
            bad(&SEED.replace("x = [\"ranks\", \"tasks\"]", "x = [\"nodes\"]"))
                .contains("no axis named 'nodes'")
        );
        assert!(
            bad(&SEED.replace("over = [\"ranks\", \"tasks\"]", "over = [\"dir\"]"))
                .contains("whole numbers")
        );
        assert!(bad(&SEED.replace("{ranks} {iolab}", "{rank} {iolab}"))
            .contains("unknown placeholder {rank}"));
        assert!(bad(&SEED.replace(" {iolab}\"", "\"")).contains("{iolab}"));
        assert!(bad(&SEED.replace("-d /tmp", "--json x -d /tmp")).contains("remove --json"));
        // xdd takes -JSON for --json; it was passed on and overridden.
        assert!(bad(&SEED.replace("-d /tmp", "-JSON x -d /tmp")).contains("remove -JSON"));
        // An axis's option fixed in args too was silently overridden.
        assert!(bad(&SEED.replace("-d /tmp", "--tasks 2 -d /tmp")).contains("is also axis"));
        // Two equal values made one point with twice the repeats.
        assert!(bad(&SEED.replace("values = [1, 4]", "values = [1, 1]")).contains("given twice"));
        // A decimal was serde's "did not match any variant".
        assert!(
            bad(&SEED.replace("values = [1, 4]", "values = [1.5, 4]")).contains("give it as text")
        );
        assert!(bad(&SEED.replace("-d /tmp", "--STORE=s -d /tmp")).contains("remove --STORE"));
        assert!(bad(&SEED.replace("total = 64", "total = 4")).contains("less than 1"));
        assert!(
            bad(&SEED.replace("launcher = \"mpirun -n {ranks} {iolab}\"", ""))
                .contains("'ranks' has no option")
        );
        assert!(bad("label = \"a\"\ntool = \"xdd\"\nrepeats = 0").contains("repeats"));
    }

    #[test]
    fn list_values_are_several_words_counted_by_their_labels() {
        let p = Plan::parse(
            r#"
label = "fpp"
tool = "xdd"
args = "-op write -reqsize 128"
[[axes]]
name = "tasks"
values = [["-targets", "1", "/d/f0"], ["-targets", "2", "/d/f0", "/d/f1.{repeat}"]]
labels = ["1", "2"]
[split]
option = "-mbytes"
total = 64
over = ["tasks"]
"#,
        )
        .unwrap();
        let pts = p.points();
        assert_eq!((pts[1].key.as_str(), pts[1].x), ("tasks=2", 2.0));
        assert_eq!(p.x_label, "tasks");
        assert_eq!(
            p.command("iolab", &pts[1], 3, "j").unwrap().join(" "),
            "iolab xdd -op write -reqsize 128 -targets 2 /d/f0 /d/f1.3 -mbytes 32 --json j"
        );
        let with_option = p
            .text
            .replace("name = \"tasks\"", "name = \"tasks\"\noption = \"-v\"");
        let q = Plan::parse(&with_option).unwrap();
        assert_eq!(
            q.tool_args(&q.points()[0], 1).unwrap()[4..7],
            ["-v", "-targets", "1"]
        );
        assert!(
            bad(&p.text.replace("[\"-targets\", \"1\", \"/d/f0\"]", "3")).contains("every value")
        );
        assert!(bad(&p
            .text
            .replace("labels = [\"1\", \"2\"]", "labels = [\"one\", \"two\"]"))
        .contains("whole numbers"));
    }

    #[test]
    fn placeholders_and_literal_braces() {
        let f = |w: &str| fill(w, |n| (n == "a").then(|| "1".to_string()));
        assert_eq!(f("x{a}y{{z}}").unwrap(), "x1y{z}");
        assert!(f("{b}").is_err());
        assert!(f("{a").is_err());
    }

    struct No;
    impl ToolCheck for No {
        fn check(&self, _: &str, args: &[String], _: bool) -> Result<Vec<Given>, String> {
            match args.iter().any(|a| a == "--tasks") {
                true => Err("unknown option --tasks".into()),
                false => Ok(Vec::new()),
            }
        }
    }

    #[test]
    fn the_tool_parser_sees_every_point() {
        let e = Plan::parse(SEED).unwrap().check_points(&No).unwrap_err();
        assert!(e.to_string().contains("point 0 (dir=private ranks=1 tasks=1): mdtest refuses its options: unknown option --tasks"), "{e}");
    }

    /// A getopt-like parser for the tests: `--name[=v]`, `-c[v]`, and
    /// `-FCu` (letters of [`Getopt::FLAGS`]) as one option per letter.
    struct Getopt;
    impl Getopt {
        const FLAGS: &'static str = "FCTru";
    }
    impl ToolCheck for Getopt {
        fn check(&self, _: &str, args: &[String], _: bool) -> Result<Vec<Given>, String> {
            let mut out = Vec::new();
            for (word, a) in args.iter().enumerate() {
                let given = |option: String| Given { word, option };
                if let Some(long) = a.strip_prefix("--") {
                    out.push(given(format!("--{}", long.split('=').next().unwrap_or(""))));
                } else if let Some(short) = a.strip_prefix('-') {
                    match short.chars().all(|c| Self::FLAGS.contains(c)) {
                        true => out.extend(short.chars().map(|c| given(format!("-{c}")))),
                        false => out.push(given(a[..2].to_string())),
                    }
                }
            }
            Ok(out)
        }
    }

    fn set_twice(text: &str) -> String {
        Plan::parse(text)
            .unwrap()
            .check_points(&Getopt)
            .unwrap_err()
            .to_string()
    }

    /// An option set by two parts of a plan ran every point with one of
    /// the values: two axes of `--tasks` ran [1,4] x [2] with 2 tasks,
    /// `-FCTru` with an axis `-u` ran "shared" private, `-n4` in args
    /// and a split `-n` gave `-n 4 ... -n 1`.
    #[test]
    fn an_option_two_parts_set_is_refused_in_any_spelling() {
        let base = "label = \"t\"\ntool = \"mdtest\"\nrepeats = 1\n";
        let tasks =
            |o: &str| format!("[[axes]]\nname = \"{o}\"\noption = \"--tasks\"\nvalues = [1, 4]\n");
        let two_axes = format!("{base}args = \"-F\"\n{}{}", tasks("a"), tasks("b"));
        let e = set_twice(&two_axes);
        assert!(
            e.contains("--tasks is set by axis 'a' (--tasks) and by axis 'b' (--tasks)"),
            "{e}"
        );
        let cluster = format!("{base}args = \"-FCTru -n 4\"\n[[axes]]\nname = \"dir\"\noption = \"-u\"\nvalues = [true, false]\n");
        let e = set_twice(&cluster);
        assert!(
            e.contains("-u is set by args (-FCTru) and by axis 'dir' (-u)"),
            "{e}"
        );
        let attached = format!(
            "{base}args = \"-F -n4\"\n{}[split]\noption = \"-n\"\ntotal = 64\nover = [\"a\"]\n",
            tasks("a")
        );
        let e = set_twice(&attached);
        assert!(
            e.contains("-n is set by args (-n4) and by split (-n)"),
            "{e}"
        );
        let words = format!("{base}args = \"-F -n 4\"\n[[axes]]\nname = \"w\"\nvalues = [[\"-u\"], [\"--tasks\", \"2\", \"-n\", \"2\"]]\n");
        let e = set_twice(&words);
        assert!(
            e.contains("point 1 (w=--tasks 2 -n 2): -n is set by args (-n) and by axis 'w' (-n)"),
            "{e}"
        );
        // Given twice within one part is the tool's business (mdtest -v -v).
        let once = format!("{base}args = \"-F -u -u\"\n{}", tasks("a"));
        Plan::parse(&once).unwrap().check_points(&Getopt).unwrap();
    }

    /// The sweep writes each run's JSON and records it: a plan that gives
    /// --json or --store anywhere (a list axis too) is refused.
    #[test]
    fn the_sweeps_own_options_are_refused_anywhere_in_the_plan() {
        let base = "label = \"t\"\ntool = \"mdtest\"\nrepeats = 1\nargs = \"-F\"\n";
        for value in [
            "[\"--store\", \"/x.sqlite\"]",
            "[\"--json=/x.json\"]",
            "[\"-u\", \"---STORE=s\"]",
        ] {
            let text = format!("{base}[[axes]]\nname = \"w\"\nvalues = [[\"-u\"], {value}]\n");
            assert!(
                bad(&text).contains("the sweep writes each run's JSON"),
                "{value}: {}",
                bad(&text)
            );
        }
    }

    /// 9 axes of 256 values are 2^72 points: the product overflowed (a
    /// panic in a debug build, 0 points and a pass in a release one).
    #[test]
    fn a_product_of_axes_past_usize_is_refused() {
        let mut text = "label = \"t\"\ntool = \"mdtest\"\nargs = \"-F\"\n".to_string();
        let values: Vec<String> = (1..=256).map(|v| v.to_string()).collect();
        for i in 0..9 {
            text.push_str(&format!(
                "[[axes]]\nname = \"a{i}\"\noption = \"-{i}\"\nvalues = [{}]\n",
                values.join(", ")
            ));
        }
        let e = bad(&text);
        assert!(e.contains("more than 2^64 points; at most 100000"), "{e}");
    }

    /// A label with a line break printed `show 'a\nb'`, which names
    /// another series; one with a NUL could be named on no command line.
    #[test]
    fn a_label_with_a_control_character_is_refused() {
        for (label, code) in [
            ("a\\nb", "U+000A"),
            ("a\\u0000b", "U+0000"),
            ("a\\u202Eb", "U+202E"),
        ] {
            let e = bad(&SEED.replace("label = \"v1\"", &format!("label = \"{label}\"")));
            assert!(e.starts_with("label: ") && e.contains(code), "{e}");
        }
        assert!(Plan::parse(&SEED.replace("label = \"v1\"", "label = \"café 2\"")).is_ok());
    }

    /// `iolab results show series:foo` names the series `foo`: a label
    /// of that form could not be named.
    #[test]
    fn a_label_starting_with_series_is_refused() {
        let e = bad(&SEED.replace("label = \"v1\"", "label = \"series:foo\""));
        assert!(
            e.contains("label: 'series:foo' starts with 'series:'"),
            "{e}"
        );
    }
}
