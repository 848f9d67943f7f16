"""The shipped monitoring: alert rules checked and unit-tested by the real ``promtool``, and every metric the
rules and the Grafana dashboard use is one that a real Freki and a real Geri export."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import urllib.request
from pathlib import Path

import pytest
import yaml

from tests.geri.geri_servers_support import embedded_backend, geri_settings, start_geri  # noqa: F401
from tests.wolf_service.conftest import metrics_url

pytestmark = pytest.mark.integration

MONITORING = Path(__file__).resolve().parents[2] / "monitoring"
RULES = MONITORING / "prometheus" / "alerts.yml"
DASHBOARD = MONITORING / "grafana" / "wolfpack-dashboard.json"
# Our metric families (the process_* ones come from prometheus_client's collectors, `up` from Prometheus).
OURS = re.compile(r"\b((?:wolf|freki|geri|process)_[a-z0-9_]+)\b")
SUFFIXES = {"counter": ("_total", "_created"), "histogram": ("_bucket", "_sum", "_count", "_created"),
            "gauge": ("",), "summary": ("_sum", "_count", "_created"), "info": ("_info",), "untyped": ("",)}


def promtool(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("promtool")
    assert exe, "promtool is missing: `make test-packages` installs Debian's prometheus package, which ships it"
    return subprocess.run([exe, *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False)


def test_alert_rules_pass_promtool_check_and_their_unit_tests() -> None:
    checked = promtool("check", "rules", RULES.name, cwd=RULES.parent)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    tested = promtool("test", "rules", "alerts.test.yml", cwd=RULES.parent)
    assert tested.returncode == 0, tested.stdout + tested.stderr
    config = promtool("check", "config", "prometheus.yml", cwd=RULES.parent)
    assert config.returncode == 0, config.stdout + config.stderr


def dashboard_queries() -> list[str]:
    """Every PromQL expression of the dashboard, with Grafana's variables as Prometheus would see them."""
    dashboard = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    return [e.replace("$__rate_interval", "5m").replace("$job", "freki|geri") for e in exprs]


def test_the_dashboard_is_well_formed_and_its_queries_parse(tmp_path: Path) -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    panels = dashboard["panels"]
    assert dashboard["uid"] and dashboard["title"] and len({p["id"] for p in panels}) == len(panels)
    cells: set[tuple[int, int]] = set()
    for panel in panels:
        pos = panel["gridPos"]
        assert 0 <= pos["x"] and pos["x"] + pos["w"] <= 24, panel["title"]
        mine = {(x, y) for x in range(pos["x"], pos["x"] + pos["w"]) for y in range(pos["y"], pos["y"] + pos["h"])}
        assert not mine & cells, f"panel {panel['title']!r} overlaps another"
        cells |= mine
        if panel["type"] != "row":
            assert panel["targets"], f"panel {panel['title']!r} has no query"
    # promtool parses PromQL when it checks rules: each query becomes a recording rule.
    rules = {"groups": [{"name": "dashboard", "rules": [
        {"record": f"dashboard:query{i}", "expr": expr} for i, expr in enumerate(dashboard_queries())]}]}
    (tmp_path / "queries.yml").write_text(yaml.safe_dump(rules))
    checked = promtool("check", "rules", "queries.yml", cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def exported_names(url: str) -> set[str]:
    """Every sample name the endpoint can export, from its ``# TYPE`` lines (families without samples too)."""
    with urllib.request.urlopen(url, timeout=10) as reply:
        text = reply.read().decode()
    names: set[str] = set()
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, family, kind = line.split(" ", 3)
            base = family.removesuffix("_total") if kind == "counter" else family
            names |= {base + suffix for suffix in SUFFIXES.get(kind, ("",))}
    return names


def test_every_metric_in_rules_and_dashboard_is_exported(start_freki, embedded_backend) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    freki = start_freki(metrics={"port": 0})
    with start_geri(geri_settings(metrics={"port": 0}), embedded_backend) as geri:
        exported = exported_names(metrics_url(freki)) | exported_names(metrics_url(geri))
    used = set(OURS.findall(RULES.read_text())) | {m for q in dashboard_queries() for m in OURS.findall(q)}
    assert used, "the pattern finds the metrics"
    assert not used - exported, f"used but exported by neither service: {sorted(used - exported)}"
