"""What the library knows without running."""

import ftlab

NINE = ["page", "block", "bast", "fast", "cach", "dftl", "tpm", "dac", "superblock"]


def test_schemes_lists_every_ftl_and_buffer_with_options():
    s = ftlab.schemes()
    ftls = [e["id"] for e in s["ftl"] if e["builtin"]]
    assert ftls == NINE
    assert [e["id"] for e in s["buffer"]][:2] == ["none", "lru"]
    assert {"bplru", "coop", "clash", "fab", "bpref", "bagc", "blru"} <= {e["id"] for e in s["buffer"]}
    page = next(e for e in s["ftl"] if e["id"] == "page")
    opt = {o["name"]: o for o in page["options"]}["gc_threshold"]
    assert opt["default"] == 3 and opt["minimum"] == 1 and opt["range"] == "at least 1" and opt["help"]
    block = next(e for e in s["ftl"] if e["id"] == "block")
    upd = {o["name"]: o for o in block["options"]}["update"]
    assert upd["allowed"] == ["in_place", "out_of_place"] and upd["default"] == "in_place"
    sb = next(e for e in s["ftl"] if e["id"] == "superblock")
    assert sb["recovery"] == {"option": "snapshots", "value": "on"}
    for e in s["ftl"] + s["buffer"]:
        assert e["description"] and e["source"]
        for o in e["options"]:
            assert set(o) >= {"name", "default", "help", "kind", "allowed", "minimum", "maximum"}


def test_config_schema_is_the_json_schema():
    s = ftlab.config_schema()
    assert s["type"] == "object"
    for k in ("ftl", "buffer", "capacity", "synthetic", "ftl_options"):
        assert k in s["properties"]
    assert "dftl" in s["properties"]["ftl"]["enum"]


def test_help_is_useful():
    doc = ftlab.run.__doc__
    for word in ("config", "trace", "workload", "check", "ConfigError", "DataLossError", "KeyboardInterrupt"):
        assert word in doc
    assert ftlab.Report.__doc__ and ftlab.read_trace.__doc__ and ftlab.generate.__doc__
    assert ftlab.ConfigError.__doc__ and "key" in ftlab.ConfigError.__doc__
