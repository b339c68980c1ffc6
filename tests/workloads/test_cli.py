"""``parrotsim workloads list|describe``: knobs map to config fields; bad input exits 2."""

from __future__ import annotations

import argparse

import pytest

from parrotsim.cli.workloads import add_parser, main
from parrotsim.workloads.catalog import WORKLOADS
from parrotsim.workloads.describe import KnobError, parse_knobs


def test_add_parser_wires_main(capsys):
    parser = argparse.ArgumentParser(prog="parrotsim")
    add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["workloads", "describe", "map_reduce", "--chunk-size", "2048"])
    assert args.main is main
    assert args.main(args) == 0
    assert "DAG depth 2 calls" in capsys.readouterr().out


def test_list_names_every_workload(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for kind in WORKLOADS:
        assert kind in out


def test_knobs_are_coerced_by_the_config():
    cfg = parse_knobs("chain_summary", ["--chunk-size", "1536", "--docs", "1,2",
                                        "--docs=3", "--output-len=75"])
    assert (cfg.chunk_size, cfg.docs, cfg.output_len) == (1536, [1, 2, 3], 75)
    cfg = parse_knobs("mixed", ["--mr-gaps", "[1, 2.5]", "--chat-max-requests", "null"])
    assert cfg.mr_gaps == [1.0, 2.5] and cfg.chat_max_requests is None
    assert parse_knobs("bing", ["--requests", "all", "--output-len", "400"]).output_len == 400


@pytest.mark.parametrize("argv,needle", [
    (["describe", "metagpt", "--filez", "16"], "unknown knob --filez"),
    (["describe", "nosuch"], "unknown workload 'nosuch'"),
    (["describe", "chain_summary", "--chunk-size", "1000"], "--chunk-size: Input should be"),
    (["describe", "metagpt", "--files"], "--files needs a value"),
    (["describe", "metagpt", "--files", "8", "--files", "4"], "given twice"),
    (["describe", "gpts", "--seed", "x"], "--seed needs an integer"),
    (["describe", "trace", "--path", "/nonexistent.csv"], "trace file not found"),
])
def test_bad_input_exits_2(capsys, argv, needle):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert needle in err


def test_seed_changes_random_workloads(capsys):
    main(["describe", "sharegpt", "--num-requests", "50", "--seed", "1"])
    one = capsys.readouterr().out
    main(["describe", "sharegpt", "--num-requests", "50", "--seed=2"])
    assert one != capsys.readouterr().out


def test_knob_error_type():
    with pytest.raises(KnobError, match="expected a knob"):
        parse_knobs("metagpt", ["16"])
