"""The Python module against the CLI: the same inputs give the same results as the verbs' --json
output, bad input raises fabricsim.InputError with the CLI's message, and a sweep from Python
writes the folder `fabricsim sweep -o` writes. Run by ctest (python_module) with PYTHONPATH at
build/python and FABRICSIM_CLI naming the fabricsim binary."""

import copy
import json
import os
import subprocess

import pytest

import fabricsim

CLI = os.environ.get("FABRICSIM_CLI", "build/tools/fabricsim/fabricsim")

# Cheap: 4 layers of Llama 2 7B on two DGX H100 servers.
SCENARIO = {
    "system": {"preset": "dgx-h100", "gpus": 16},
    "model": {"preset": "llama2-7b", "layers": 4},
    "parallelism": {"tp": 8, "micro_batch": 1},
    "training": {"global_batch": 16, "seq_len": 4096},
}

SPEC = {
    "base": SCENARIO,
    "axes": {
        "/system/gpus": [8, 16, 24],
        "/system/fabric/nic_bandwidth": ["200 Gbps", "400 Gbps"],
    },
    "fidelity": "flow",
}


def cli(*args, code=0):
    r = subprocess.run([CLI, *args], capture_output=True, text=True, check=False)
    assert r.returncode == code, r.stderr
    return r


def without_wall_times(doc):
    """A result without its wall-clock times (keys ending in wall_s), which differ run to run."""
    if isinstance(doc, dict):
        return {k: without_wall_times(v) for k, v in doc.items() if not k.endswith("wall_s")}
    if isinstance(doc, list):
        return [without_wall_times(v) for v in doc]
    return doc


def from_dict(result):
    """A result of a dict input as the CLI gives it for that dict in a file: the same but for
    the base it records (the dict is "<scenario>", as in error messages)."""
    assert result["base"] == "<scenario>" and result["overrides"] == []
    return {k: v for k, v in without_wall_times(result).items() if k != "base"}


def without_base(result):
    return {k: v for k, v in result.items() if k != "base"}


def cli_json(*args):
    return without_wall_times(json.loads(cli(*args).stdout))


def write(tmp_path, name, doc):
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return str(path)


def cli_message(r):
    """The CLI's error message, without its "fabricsim: " prefix."""
    assert r.stderr.startswith("fabricsim: ")
    return r.stderr[len("fabricsim: "):].rstrip("\n")


def test_import_and_version():
    assert fabricsim.__version__ in cli("--version").stdout
    assert issubclass(fabricsim.InputError, ValueError)


def test_run_equals_cli_json(tmp_path):
    path = write(tmp_path, "s.json", SCENARIO)
    expected = cli_json("run", path, "--json")
    assert without_wall_times(fabricsim.run(path)) == expected
    assert expected["base"] == path
    assert from_dict(fabricsim.run(SCENARIO)) == without_base(expected)
    assert expected["feasible"] and expected["step_time_s"] > 0


def test_run_default_scenario_equals_cli():
    assert without_wall_times(fabricsim.run()) == cli_json("run", "--json")


def test_run_of_its_own_scenario_echo_is_the_same_run():
    first = fabricsim.run(SCENARIO)
    again = fabricsim.run(first["scenario"])
    assert from_dict(again) == from_dict(first)


def test_run_leaves_the_dict_alone():
    doc = copy.deepcopy(SCENARIO)
    fabricsim.run(doc)
    assert doc == SCENARIO


def test_bad_scenario_raises_the_cli_message(tmp_path):
    bad = copy.deepcopy(SCENARIO)
    bad["training"]["global_btach"] = 16
    path = write(tmp_path, "bad.json", bad)
    r = cli("run", path, "--json", code=2)
    with pytest.raises(fabricsim.InputError) as e:
        fabricsim.run(path)
    assert str(e.value) == cli_message(r)
    assert "global_btach" in str(e.value)
    # From a dict the message names the document as the CLI names one without a file.
    with pytest.raises(ValueError, match="<scenario>.*global_btach"):
        fabricsim.run(bad)


def test_missing_file_and_bad_types(tmp_path):
    missing = str(tmp_path / "none.json")
    r = cli("run", missing, code=2)
    with pytest.raises(fabricsim.InputError) as e:
        fabricsim.run(missing)
    assert str(e.value) == cli_message(r)
    with pytest.raises(TypeError):
        fabricsim.run([1, 2])
    with pytest.raises(ValueError):
        fabricsim.run({"training": {"global_batch": float("nan")}})


def test_bad_fabric_raises_the_cli_message(tmp_path):
    bad = copy.deepcopy(SCENARIO)
    bad["system"]["fabric"] = {"nic_bandwidth": "fast"}
    path = write(tmp_path, "bad.json", bad)
    r = cli("run", path, code=2)
    with pytest.raises(fabricsim.InputError) as e:
        fabricsim.run(path)
    assert str(e.value) == cli_message(r)


def test_plan_equals_cli_json(tmp_path):
    path = write(tmp_path, "s.json", SCENARIO)
    expected = cli_json("plan", path, "--json", "--top", "2", "--max-micro-batch", "2")
    got = fabricsim.plan(SCENARIO, top=2, max_micro_batch=2)
    assert from_dict(got) == without_base(expected)
    assert len(got["plans"]) > 0
    fixed = fabricsim.plan(SCENARIO, fix=["tp=4"], top=0, max_micro_batch=2)
    assert without_wall_times(fabricsim.plan(path, fix=["tp=4"], top=0, max_micro_batch=2)) == \
        cli_json("plan", path, "--json", "--top", "0", "--max-micro-batch", "2", "--fix", "tp=4")
    assert fixed["analytical_ranking"]
    assert all(p["plan"].startswith("TP4 ") for p in fixed["analytical_ranking"])
    with pytest.raises(fabricsim.InputError, match="tp"):
        fabricsim.plan(SCENARIO, fix=["tp=four"])


def test_scale_equals_cli_json(tmp_path):
    doc = dict(SCENARIO, scale={"systems": ["dgx-h100"], "gpus": [8, 16, 32], "modes": ["weak"]})
    doc["system"] = {"preset": "dgx-h100", "gpus": 8}
    doc["training"] = {"global_batch": 8, "seq_len": 4096}
    path = write(tmp_path, "s.json", doc)
    expected = cli_json("scale", path, "--json")
    got = fabricsim.scale(doc)
    assert from_dict(got) == without_base(expected)
    assert without_wall_times(fabricsim.scale(path)) == expected
    # With the plan searched at every size: the rows name their plan, the systems are compared.
    doc["scale"]["replan"] = True
    path = write(tmp_path, "replan.json", doc)
    expected = cli_json("scale", path, "--json")
    got = without_wall_times(fabricsim.scale(path, threads=2))
    assert got == expected
    assert "comparison" in got and all(r.get("plan") for r in got["rows"] if r["feasible"])
    assert [r["gpus"] for r in got["rows"]] == [8, 16, 32]


def test_collective_equals_cli_json():
    args = dict(system="dgx-h100", gpus=16, op="all_gather", max_bytes="1M", step_factor=4)
    expected = cli_json("collective", "--system", "dgx-h100", "--gpus", "16", "--op",
                        "all_gather", "--max-bytes", "1M", "--step-factor", "4", "--json")
    got = fabricsim.collective(**args)
    assert without_wall_times(got) == expected
    assert got["rows"][-1]["size_bytes"] <= 1 << 20


def test_collective_bad_flag_raises_the_cli_message():
    r = cli("collective", "--op", "all_gossip", "--json", code=2)
    with pytest.raises(fabricsim.InputError) as e:
        fabricsim.collective(op="all_gossip")
    assert str(e.value) == cli_message(r)


def sorted_lines(path):
    with open(path, encoding="utf-8") as f:
        return sorted(f.read().splitlines())


def test_sweep_equals_cli_sweep(tmp_path):
    spec = write(tmp_path, "spec.json", SPEC)
    lines = cli("sweep", spec).stdout.splitlines()
    rows = fabricsim.sweep(SPEC)
    assert [json.loads(line) for line in lines] == rows
    assert len(rows) == 6
    assert [r["index"] for r in rows] == list(range(6))
    assert fabricsim.sweep(spec, threads=2) == rows


def test_sweep_output_equals_cli_folder(tmp_path):
    spec = write(tmp_path, "spec.json", SPEC)
    cli("sweep", spec, "-q", "-o", str(tmp_path / "cli"))
    fabricsim.sweep(spec, output=tmp_path / "py")
    for f in ("results.jsonl", "results.csv", "sweep.json"):
        assert sorted_lines(tmp_path / "cli" / f) == sorted_lines(tmp_path / "py" / f)
    # A folder in use is refused with the CLI's message; resume continues a shard's folder.
    r = cli("sweep", spec, "-o", str(tmp_path / "py"), code=2)
    with pytest.raises(fabricsim.InputError) as e:
        fabricsim.sweep(spec, output=tmp_path / "py")
    assert str(e.value) == cli_message(r)
    first = fabricsim.sweep(spec, output=tmp_path / "shard", shard="1/2")
    assert [r["index"] for r in first] == [1, 3, 5]
    assert fabricsim.sweep(spec, output=tmp_path / "shard", shard="1/2", resume=True) == []


def test_bad_sweep_spec_raises(tmp_path):
    bad = dict(SPEC, combine="zip")
    path = write(tmp_path, "bad.json", bad)
    r = cli("sweep", path, code=2)
    with pytest.raises(fabricsim.InputError) as e:
        fabricsim.sweep(path)
    assert str(e.value) == cli_message(r)
    with pytest.raises(fabricsim.InputError, match="shard"):
        fabricsim.sweep(SPEC, shard="2/2")


def test_to_dataframe(tmp_path):
    pandas = pytest.importorskip("pandas")
    frame = fabricsim.to_dataframe(fabricsim.sweep(SPEC))
    assert isinstance(frame, pandas.DataFrame)
    assert len(frame) == 6
    assert "metrics.tokens_per_s_per_gpu" in frame.columns or "feasible" in frame.columns
    coll = fabricsim.to_dataframe(fabricsim.collective(max_bytes="64K"))
    assert list(coll["size_bytes"])[:2] == [8, 16]
    plans = fabricsim.to_dataframe(fabricsim.plan(SCENARIO, top=0, max_micro_batch=2))
    assert plans["step_time_s"].is_monotonic_increasing
    with pytest.raises(ValueError):
        fabricsim.to_dataframe({"what": 1})
