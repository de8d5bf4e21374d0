"""conftest.py for tests/package: prints passed/failed/skipped per test file
at the end, and enforces BRAID_MIN_NODE_PASS on onnx's backend runner."""
import collections
import os

_counts = collections.defaultdict(collections.Counter)


def pytest_runtest_logreport(report):
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
        _counts[report.nodeid.split("::")[0]][report.outcome] += 1


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    for f, c in sorted(_counts.items()):
        terminalreporter.write_line(f"{f}: passed {c['passed']}, failed {c['failed']}, skipped {c['skipped']}")


def pytest_sessionfinish(session, exitstatus):
    need = int(os.environ.get("BRAID_MIN_NODE_PASS", "0"))
    got = sum(c["passed"] for f, c in _counts.items() if "onnx_backend" in f)
    if need and got < need and session.testscollected:
        session.exitstatus = 1
        print(f"\nonnx backend runner: {got} node tests passed, fewer than BRAID_MIN_NODE_PASS={need}")
