"""benchmarks/fixed_cost.py: each part's seconds are its own (a part inside another pauses it), and the table sets each
side's median beside the other's with their ratio (no timing: a fake clock)."""
from __future__ import annotations

import fixed_cost


def test_a_part_inside_another_is_counted_once_and_only_in_itself(monkeypatch):
    now = [0.0]
    monkeypatch.setattr(fixed_cost.time, "perf_counter", lambda: now[0])
    parts = fixed_cost.Parts()
    with parts.part("setup"):
        now[0] += 1.0
        with parts.part("numba cache"):
            now[0] += 2.0
        now[0] += 0.5
    with parts.part("numba cache"):
        now[0] += 1.0
    assert parts.seconds["setup"] == 1.5 and parts.seconds["numba cache"] == 3.0
    assert parts.calls["setup"] == 1 and parts.calls["numba cache"] == 2


def test_wrap_times_every_call_of_a_function_as_its_part(monkeypatch):
    now = [0.0]
    monkeypatch.setattr(fixed_cost.time, "perf_counter", lambda: now[0])

    class Owner:
        @staticmethod
        def work(x: int) -> int:
            now[0] += x
            return 2 * x

    parts = fixed_cost.Parts()
    parts.wrap(Owner, "work", "eval")
    assert Owner.work(3) == 6 and Owner.work(1) == 2
    assert parts.seconds["eval"] == 4.0 and parts.calls["eval"] == 2


def test_the_table_gives_medians_and_the_ratio_and_a_dash_where_a_side_has_no_such_part():
    figures = {"pearl_py": {"import": [1.0, 3.0, 2.0], "plan": [0.4], "spawn": [0.3], "whole": [4.0]},
               "SB3": {"import": [2.0, 2.0, 2.0], "whole": [5.0]}}
    rows = {row.split()[0]: row.split()[1:] for row in fixed_cost.table(figures)[1:]}
    assert rows["import"] == ["2.00", "2.00", "1.00"]
    assert rows["plan"] == ["0.40", "-", "-"] and rows["spawn"] == ["0.30", "-", "-"]
    assert rows["whole"] == ["4.00", "5.00", "0.80"]
    assert rows["eval"] == ["-", "-", "-"]


def test_modules_and_python_calls_go_to_the_innermost_part(tmp_path, monkeypatch):
    """The load-independent figures (``--counts``): a module first imported inside a part is that part's, and each
    Python call is counted in the part it ran in, not in the part around it."""
    (tmp_path / "fixed_cost_probe_module.py").write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))

    def work() -> int:
        return 1

    parts = fixed_cost.Parts(count_calls=True)
    with parts.part("setup"):
        for _ in range(3):
            work()
        with parts.part("eval"):
            import fixed_cost_probe_module  # noqa: F401
            for _ in range(100):
                work()
    calls = parts.python_calls()
    assert parts.modules["eval"] == 1 and parts.modules["setup"] == 0
    assert 3 <= calls["setup"] < 100 <= calls["eval"] and calls["plan"] == 0   # setup's: work's and the parts' own


def test_the_counts_table_sets_each_sides_modules_calls_and_cpu_share_beside_the_other():
    zero = dict.fromkeys(fixed_cost.PARTS, 0)
    found = {"pearl_py": {"part_modules": {**zero, "import": 1800, "plan": 800}, "cpu": {**zero, "import": 3.0,
                                                                                      "rest": 1.0},
                          "python_calls": {**zero, "import": 2_000_000, "plan": 1_500_000}},
             "SB3": {"part_modules": {**zero, "import": 1300, "setup": 820}, "cpu": {**zero, "setup": 1.0},
                     "python_calls": {**zero, "setup": 1_000_000}}}
    rows = {row.split()[0]: row.split()[1:] for row in fixed_cost.counts_table(found)[2:]}
    assert rows["import"] == ["1800", "1300", "2,000,000", "0", "75.0", "0.0"]
    assert rows["setup"] == ["0", "820", "0", "1,000,000", "0.0", "100.0"]
    assert rows["total"] == ["2600", "2120", "3,500,000", "1,000,000", "100.0", "100.0"]
