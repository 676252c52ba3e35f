"""The history checker of scripts/faults: what a run acknowledged against what the broker
stores at its end, for one durable subject.

The workload publishes the integers 1, 2, 3, ... (as `{"n": i, ...}`) in order, over
one connection at a time; after a fault the next connection goes on from the value after
the last one *sent*, so values that were sent but not acknowledged may be stored or not.
The invariants, over the whole run's history:

- every acknowledged value is stored (else: lost);
- once (else: duplicated);
- in the order it was published: the stored values increase (else: reordered);
- at consecutive offsets from the first one kept (else: an offset gap);
- under one epoch, the one seen at every cycle (else: the epoch changed), unless the
  scenario expects a new epoch (a quarantined subject, whose history starts over).

`check()` returns a Report; `self_test()` feeds it histories that break each invariant
and checks that it says so (scripts/faults runs it as the scenario `checker`).
"""


class Report:
    """What one subject's history shows."""

    def __init__(self):
        self.acknowledged = 0
        self.stored = 0
        self.lost = []
        self.duplicated = []
        self.reordered = []
        self.offset_gaps = []
        self.epochs = []
        self.problems = []

    @property
    def ok(self):
        return not self.problems

    def merge(self, other):
        self.acknowledged += other.acknowledged
        self.stored += other.stored
        self.lost += other.lost
        self.duplicated += other.duplicated
        self.reordered += other.reordered
        self.offset_gaps += other.offset_gaps
        self.problems += other.problems
        return self

    def __repr__(self):
        return (f"Report(acknowledged={self.acknowledged}, stored={self.stored}, lost={len(self.lost)}, "
                f"duplicated={len(self.duplicated)}, reordered={len(self.reordered)}, "
                f"offset_gaps={len(self.offset_gaps)}, problems={self.problems})")


def check(stored, acknowledged, epochs=(), final_epoch=None, expect_new_epoch=False, first_offset=1,
          allow_loss=False, allow_new_epoch=False, subject="subject"):
    """Checks one subject.

    stored: [(offset, n)] as read from the broker at the end, in the order it sent them.
    acknowledged: the values n acknowledged over the run.
    epochs: the epochs seen during the run (each cycle's); final_epoch: the one read at the end.
    expect_new_epoch: the final epoch must differ from those seen (and the history starts over).
    first_offset: the offset the kept history should start at (1 unless retention trimmed it).
    allow_loss: acknowledged values may be missing (a setting that does not promise them);
    they are still counted in `lost`.
    allow_new_epoch: the epoch may change (the history before it was lost, and said so); the
    offsets are then checked within each epoch's stretch of the run, not across.
    """
    report = Report()
    acked = set(acknowledged)
    report.acknowledged = len(acked)
    report.stored = len(stored)
    seen = set()
    previous_n = None
    previous_offset = None
    for index, (offset, n) in enumerate(stored):
        if n in seen:
            report.duplicated.append(n)
        seen.add(n)
        if previous_n is not None and n <= previous_n and n not in report.duplicated:
            report.reordered.append(n)
        expected = first_offset if index == 0 else previous_offset + 1
        if offset != expected:
            report.offset_gaps.append((expected, offset))
        previous_n = n if previous_n is None else max(previous_n, n)
        previous_offset = offset
    report.lost = sorted(acked - seen)
    distinct = []
    for epoch in list(epochs) + ([final_epoch] if final_epoch else []):
        if epoch and epoch not in distinct:
            distinct.append(epoch)
    report.epochs = distinct
    if report.lost and not allow_loss:
        shown = ", ".join(map(str, report.lost[:5])) + ("…" if len(report.lost) > 5 else "")
        report.problems.append(f"{subject}: {len(report.lost)} acknowledged value(s) missing ({shown})")
    if report.duplicated:
        report.problems.append(f"{subject}: {len(report.duplicated)} value(s) stored twice ({report.duplicated[:5]})")
    if report.reordered:
        report.problems.append(f"{subject}: {len(report.reordered)} value(s) out of order ({report.reordered[:5]})")
    if report.offset_gaps:
        report.problems.append(f"{subject}: offsets not consecutive (expected, found): {report.offset_gaps[:5]}")
    if expect_new_epoch:
        if final_epoch is None or final_epoch in list(epochs):
            report.problems.append(f"{subject}: expected a new epoch, found {final_epoch}")
    elif len(distinct) > 1 and not allow_new_epoch:
        report.problems.append(f"{subject}: the epoch changed: {distinct}")
    return report


def self_test():
    """Each invariant broken once, and a clean history: returns the failures (empty: all caught)."""
    failures = []

    def expect(name, report, problem_fragment):
        if problem_fragment is None:
            if not report.ok:
                failures.append(f"{name}: a clean history was flagged: {report.problems}")
        elif not any(problem_fragment in p for p in report.problems):
            failures.append(f"{name}: not caught (problems: {report.problems})")

    clean = [(1, 1), (2, 2), (3, 4), (4, 5)]  # 3 was sent, not acknowledged, not stored
    expect("clean", check(clean, [1, 2, 4, 5], epochs=["e"], final_epoch="e"), None)
    expect("lost", check([(1, 1), (2, 2)], [1, 2, 3], epochs=["e"], final_epoch="e"), "missing")
    expect("duplicated", check([(1, 1), (2, 2), (3, 2)], [1, 2], final_epoch="e"), "twice")
    expect("reordered", check([(1, 1), (2, 3), (3, 2)], [1, 2, 3], final_epoch="e"), "out of order")
    expect("offset gap", check([(1, 1), (3, 2)], [1, 2], final_epoch="e"), "offsets")
    expect("first offset", check([(2, 1)], [1], final_epoch="e"), "offsets")
    expect("epoch", check(clean, [1, 2], epochs=["e", "f"], final_epoch="f"), "epoch changed")
    expect("new epoch expected", check([], [], epochs=["e"], final_epoch="e", expect_new_epoch=True), "new epoch")
    expect("new epoch given", check([], [], epochs=["e"], final_epoch="f", expect_new_epoch=True), None)
    allowed = check([(1, 1)], [1, 2], final_epoch="e", allow_loss=True)
    if not allowed.ok or allowed.lost != [2]:
        failures.append(f"allowed loss: {allowed}")
    return failures
